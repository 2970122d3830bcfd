"""``--backend openai``: any OpenAI-compatible chat-completions server behind the model Protocol.

Requests go out concurrently (``AsyncOpenAI``, at most ``--max-concurrency`` in flight); the
client retries 429s, 5xx answers, timeouts and lost connections ``--max-retries`` times with
exponential backoff, then the run stops with one line (finished items are on disk: rerun to
resume). The API key is read from the environment variable named by ``--api-key-env``
(:mod:`~mmspubench.eval.backends.api_key`) and is never written, logged or shown in an error.

The server applies its own chat template, so ``render`` returns the chat messages as JSON (the
image as a placeholder); that JSON is what samples.jsonl records as each condition's prompt.

CGL needs the prompt log-probabilities, which only some servers return (vLLM's does, with its
extra parameters ``prompt_logprobs``, ``continue_final_message`` and ``return_token_ids``). A
probe at start finds out; without them CGLA (and ``logprob`` answers) are refused up front. The
scored tokens follow the transformers scorer's rule on the server's own tokenization: the tokens
of context + continuation after those of the context (from the server's ``/tokenize``), whose
prefix property is checked, and the chat completion's prompt tokens must be exactly ``/tokenize``'s
of context + continuation (a server that ignores ``continue_final_message`` in chat completions
would have end-of-turn tokens scored); every answer is checked
(:mod:`~mmspubench.eval.backends.openai.server_answers`). The BOS rule is the same too: special tokens are added unless the
chat template already writes the BOS (vLLM's chat endpoint adds none unless asked). A server that
honours ``skip_reading_prefix_cache`` and reports its cached tokens gets the scoring requests read
its prefix cache, checked per answer (:mod:`~mmspubench.eval.backends.openai.server_cache`).

Text-only prompts (the blind view, ``--blind-image none``): :meth:`OpenAIModel.render_text` gives
the same messages without the image part, so the request's user content is its text part alone
(no ``image_url``); the server applies its template to that chat, and scoring follows the same
rule and checks. Their cache waves group them by context (the letters of one question).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.backends.api_key import read_api_key
from mmspubench.eval.backends.openai import sampling, server_cache
from mmspubench.eval.backends.openai import server_answers as answers
from mmspubench.eval.backends.openai.messages import ImageUrls, data_url, render_messages, with_image
from mmspubench.eval.backends.openai.server_answers import continuation_sum
from mmspubench.eval.backends.vllm.cache import CacheCounts
from mmspubench.eval.checkpoint.thinking import NOT_THINKING, ThinkingSetting, server_setting
from mmspubench.eval.protocol import ChatPrompt, FastPath, Generation, ModelInfo, ScoreRequest
from mmspubench.redact import clean, redact

if TYPE_CHECKING:
    from mmspubench.eval.backends.openai import Options as OpenAIOptions
    from PIL.Image import Image

T = TypeVar("T")

NO_PROMPT_LOGPROBS = (
    "this endpoint returns no prompt log-probabilities; run with --metrics accuracy "
    "(and --answer-mode generate)"
)
"""The one line a CGLA (or logprob-answer) run gets against a server without prompt log-probabilities."""


@dataclass(frozen=True, slots=True)
class ServerFeatures:
    """What the probe found out about the server."""

    prompt_logprobs: bool
    """The server returns prompt log-probabilities and tokenizes chats (``/tokenize``): vLLM's does."""
    add_special_tokens: bool | None
    """Whether requests ask for the tokenizer's special tokens (BOS); ``None`` for a server without
    vLLM's extensions (nothing extra is sent)."""
    reads_cache: bool = False
    """Scoring requests read the server's prefix cache (:mod:`~mmspubench.eval.backends.openai.server_cache`)."""
    version: str | None = None
    """The version the server reports (vLLM's ``GET /version``), else ``None``."""


class OpenAIModel:
    """A model served behind an OpenAI-compatible chat-completions endpoint."""

    def __init__(
        self,
        name: str,
        options: OpenAIOptions,
        features: ServerFeatures,
        info: ModelInfo,
        thinking: ThinkingSetting = NOT_THINKING,
    ) -> None:
        self.name = name
        """The model name the server serves."""
        self.options = options
        """The engine options (URL, concurrency, retries)."""
        self.features = features
        """What the server supports (probe)."""
        self._info = info
        self.usage = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
        """Token usage summed over this process's requests."""
        self.cache_counts = CacheCounts()
        """Scoring requests' prompt tokens computed and read from the server's cache, rescored share."""
        self.sampling = sampling.Sampling()
        """How generation requests are sent (:mod:`~mmspubench.eval.backends.openai.sampling`)."""
        self._sampling_found = False
        self.thinking = thinking
        """``--thinking`` as sent (``chat_template_kwargs``; the server's template is unseen here)."""

    @property
    def info(self) -> ModelInfo:
        """Identity of the model for the result files."""
        return self._info

    @property
    def reasoning_style(self) -> str:
        """How the replies mark their reasoning: the server's template is unseen, so ``think``
        (inline ``<think>`` blocks; a reply without one is read whole, as under ``none``), or
        ``kimi``/``glm`` when the served model's name says so; reasoning the server returns apart
        (``reasoning_content``) is kept apart under every style."""
        return server_style(self.name)

    @property
    def backend_info(self) -> dict[str, Any]:
        """results.json's ``backend`` (the key's variable name only, never the key)."""
        import openai

        o = self.options
        settings = {
            "base_url": redact(o.base_url or "") or None,  # no password of the URL either
            "api_key_env": o.api_key_env,
            "max_concurrency": o.max_concurrency,
            "max_retries": o.max_retries,
            "request_timeout": o.request_timeout,
            "prompt_logprobs": self.features.prompt_logprobs,
            "add_special_tokens": self.features.add_special_tokens,
            "token_budget": self.sampling.budget,
            "reasoning_effort": o.reasoning_effort,
        }
        return {
            "name": "openai",
            "version": openai.__version__,
            "settings": settings,
            "usage": dict(self.usage),  # reasoning_tokens only once the server counted some
            "prefix_cache": {"read": self.features.reads_cache, **self.cache_counts.record()},
        }

    def render(self, prompt: ChatPrompt) -> str:
        """The chat messages as JSON; the server applies its chat template."""
        return render_messages(prompt)

    text_only = True
    """The blind view's text-only prompts run here: :meth:`render_text`, and ``None`` images in
    ``generate`` and ``score`` (a user message without an ``image_url`` part)."""

    def render_text(self, prompt: ChatPrompt) -> str:
        """The chat messages of :meth:`render` without the image part."""
        return render_messages(prompt, image=False)

    def _extra(self, scored: bool = True, **more: Any) -> dict[str, Any]:
        """The body's non-OpenAI part; ``chat_template_kwargs`` of ``--thinking`` when not ``auto``
        (``scored``: a scoring request, rendered with thinking off)."""
        kwargs = dict(self.thinking.kwargs_for(scored))
        more = {**({"chat_template_kwargs": kwargs} if kwargs else {}), **more}
        if self.features.add_special_tokens is None:
            return more
        return {"add_special_tokens": self.features.add_special_tokens, **more}

    def _request_params(self, max_new_tokens: int, extra: dict[str, Any]) -> dict[str, Any]:
        """Every generation request's parameters besides model and messages (the one place where
        the budget, the temperature, the reasoning effort and the extra body are set)."""
        return sampling.request_params(self.sampling, max_new_tokens, self.options.reasoning_effort, extra)

    async def _create(
        self, client: Any, messages: list[dict[str, Any]], extra: dict[str, Any], budget: int
    ) -> Any:
        """One generation request; the run's first one (``_sampling_found`` false) finds out what
        the server takes, sending again after a refusal :func:`~.sampling.adjusted` answers."""
        import openai

        while True:
            params = self._request_params(budget, extra)
            try:
                return await client.chat.completions.create(model=self.name, messages=messages, **params)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as err:
                found = None if self._sampling_found else sampling.adjusted(self.sampling, err)
                if found is None:
                    raise
                self.sampling = found

    def generate(
        self, images: Sequence[Image | None], contexts: Sequence[str], max_new_tokens: int
    ) -> list[Generation]:
        """Greedy answers (temperature 0, unless the model refuses it), requests in flight
        concurrently; each with its reasoning, finish reason, tokens and its request's wall time."""
        if len(images) != len(contexts):
            raise ValueError(f"got {len(images)} images for {len(contexts)} contexts")
        urls = ImageUrls(images)

        def job(image: Image | None, context: str) -> Callable[[Any], Awaitable[Generation]]:
            async def run(client: Any) -> Generation:
                messages = with_image(context, urls.url(image))
                extra = self._extra(scored=False)
                if messages[-1]["role"] == "assistant":
                    if self.features.add_special_tokens is None:
                        raise MMSpuBenchError(
                            "an assistant prefix needs a server with vLLM's continue_final_message"
                        )
                    extra.update(continue_final_message=True, add_generation_prompt=False)
                start = time.perf_counter()
                response = await self._create(client, messages, extra, max_new_tokens)
                seconds = time.perf_counter() - start
                self._count(response)
                return dataclasses.replace(answers.reply(response), seconds=seconds)

            return run

        jobs = [job(i, c) for i, c in zip(images, contexts, strict=True)]
        replies: list[Generation] = []
        if jobs and not self._sampling_found:  # the first request alone: what the server takes
            replies = _run(self, jobs[:1])
            self._sampling_found = True
            jobs = jobs[1:]
        replies += _run(self, jobs)
        return replies

    @property
    def environment(self) -> dict[str, Any]:
        """What results.json's ``environment`` records of this model: the server's version and the
        sampling settings (the chat template and image settings are the server's, unseen here)."""
        found = {"server_version": self.features.version, "generation": self.sampling.generation()}
        if self.options.reasoning_effort is not None:  # it changes the answers: in the run's identity
            found["reasoning_effort"] = self.options.reasoning_effort
        if self.thinking.recorded:
            found["thinking"] = self.thinking.record()
        return found

    @property
    def fast_path(self) -> FastPath | None:
        """Scoring that reads the server's prefix cache, where the probe found it (checked by the
        runner against :meth:`reference_score` on a run's first items), else ``None``."""
        return server_cache.SERVER_CACHE if self.features.reads_cache else None

    def reference_score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        """The same scores computed afresh by the server, without reading its prefix cache."""
        return self._score(requests, read_cache=False, counts=CacheCounts())

    def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        """CGL of each request from the server's prompt log-probabilities (see module doc)."""
        return self._score(requests, read_cache=self.features.reads_cache, counts=self.cache_counts)

    def _score(
        self, requests: Sequence[ScoreRequest], *, read_cache: bool, counts: CacheCounts
    ) -> list[float]:
        if not requests:
            return []
        if not self.features.prompt_logprobs:
            raise MMSpuBenchError(NO_PROMPT_LOGPROBS)
        urls = ImageUrls([r.image for r in requests])
        firsts = {(urls.key(r.image), r.context): r.image for r in requests}
        keys = list(firsts)

        def tokenize(key: tuple[str | None, str]) -> Callable[[Any], Awaitable[list[int]]]:
            return lambda client: self._tokenize(client, with_image(key[1], urls.url(firsts[key])))

        # letters of one question share their context's tokenization: asked once, first
        contexts = dict(zip(keys, _run(self, [tokenize(k) for k in keys]), strict=True))

        def job(request: ScoreRequest) -> Callable[[Any], Awaitable[float]]:
            async def run(client: Any) -> float:
                messages = with_image(request.context, urls.url(request.image), request.continuation)
                tokenized = await self._tokenize(client, messages)
                context = contexts[(urls.key(request.image), request.context)]
                ids, logprobs = await self._checked_logprobs(
                    client, messages, len(tokenized) - len(context), read_cache, counts
                )
                answers.check_same_tokens(tokenized, ids, request)
                return continuation_sum(context, ids, logprobs, request)

            return run

        if not read_cache:
            return _run(self, [job(r) for r in requests])
        # the first request of each image warms the server's cache for the others
        return server_cache.in_waves(
            [urls.wave_key(r) for r in requests], lambda wave: _run(self, [job(requests[i]) for i in wave])
        )

    async def _checked_logprobs(
        self,
        client: Any,
        messages: list[dict[str, Any]],
        n_scored: int,
        read_cache: bool,
        counts: CacheCounts,
    ) -> tuple[list[int], list[Any]]:
        """Prompt log-probabilities, read from the cache where ``read_cache`` (checked)."""

        def ask(read: bool) -> Awaitable[tuple[list[int], list[Any], int | None]]:
            return self._prompt_logprobs(client, messages, read)

        return await server_cache.checked(ask, read_cache, n_scored, counts)

    async def _tokenize(self, client: Any, messages: list[dict[str, Any]]) -> list[int]:
        body = {"model": self.name, "messages": messages, **_continue(), **self._extra()}
        result = await client.post(_root(self.options.base_url) + "/tokenize", cast_to=object, body=body)
        return answers.tokenize_tokens(result)

    async def _prompt_logprobs(
        self, client: Any, messages: list[dict[str, Any]], read_cache: bool
    ) -> tuple[list[int], list[Any], int | None]:
        extra = self._extra(prompt_logprobs=0, return_token_ids=True, **_continue())
        if self.features.reads_cache:  # otherwise nothing more is sent
            extra.update(server_cache.READ_CACHE if read_cache else server_cache.SKIP_CACHE)
        response = await client.chat.completions.create(
            model=self.name, messages=messages, max_tokens=1, temperature=0.0, extra_body=extra
        )
        self._count(response)
        found = answers.prompt_logprobs(response.model_dump())
        if found is None:
            raise MMSpuBenchError(NO_PROMPT_LOGPROBS)
        return (*found, server_cache.cached_tokens(response))

    def _count(self, response: Any) -> None:
        self.usage["requests"] += 1
        usage = getattr(response, "usage", None)
        for field in ("prompt_tokens", "completion_tokens"):  # a count the server got wrong is not counted
            value = answers.count(usage, field)
            if value is not None:
                self.usage[field] += value
        thought = answers.reasoning_count(usage)
        if thought:  # written only once the server counted reasoning: other runs' usage stays as it was
            self.usage["reasoning_tokens"] = self.usage.get("reasoning_tokens", 0) + thought


def _continue() -> dict[str, Any]:
    return {"continue_final_message": True, "add_generation_prompt": False}


def _root(base_url: str | None) -> str:
    url = (base_url or "").rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def api_key(options: OpenAIOptions) -> str:
    """The key from ``$api_key_env`` (:func:`~mmspubench.eval.backends.api_key.read_api_key`)."""
    return read_api_key(options.api_key_env)


def _client(options: OpenAIOptions) -> Any:
    from openai import AsyncOpenAI

    return AsyncOpenAI(
        base_url=options.base_url,
        api_key=api_key(options),
        max_retries=options.max_retries,
        timeout=options.request_timeout,
    )


def _run(model: OpenAIModel, jobs: Sequence[Callable[[Any], Awaitable[T]]]) -> list[T]:
    """Run the jobs concurrently (at most ``max_concurrency`` at once); API errors become one line."""
    return call_jobs(model.options, jobs)


BACKEND_FLAG = "--backend openai"
"""What the one-line error of a failed request names by default (the model's server)."""


def call_jobs(
    options: OpenAIOptions, jobs: Sequence[Callable[[Any], Awaitable[T]]], *, what: str = BACKEND_FLAG
) -> list[T]:
    """Run ``jobs`` on one client of ``options`` (its key, retries, timeouts, concurrency); a failed
    request is one line starting with ``what`` (:func:`describe_error`), the key never shown. The
    model's server and ``--extract judge``'s judge share it."""

    async def main() -> list[T]:
        semaphore = asyncio.Semaphore(options.max_concurrency)
        async with _client(options) as client:

            async def one(job: Callable[[Any], Awaitable[T]]) -> T:
                async with semaphore:
                    return await asyncio.wait_for(job(client), job_deadline(options))

            tasks = [asyncio.ensure_future(one(job)) for job in jobs]
            try:
                return list(await asyncio.gather(*tasks))
            finally:  # on the first failure the others stop, and their errors are collected, not logged
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

    try:
        return asyncio.run(main())
    except MMSpuBenchError:
        raise
    except Exception as err:  # openai.APIError and friends: one line, the key never shown
        raise MMSpuBenchError(describe_error(err, options, what)) from None


REQUESTS_PER_JOB = 3
"""The most requests one job makes (the probe: two ``/tokenize``, one chat completion)."""
MAX_RETRY_WAIT = 60.0
"""The longest wait between retries the OpenAI client honours (a server's ``retry-after``)."""


def job_deadline(options: OpenAIOptions) -> float:
    """Seconds one job may take with every retry: ``--request-timeout`` bounds one read, so a
    server that trickles bytes would otherwise keep a request open for ever."""
    one_request = (options.max_retries + 1) * options.request_timeout + options.max_retries * MAX_RETRY_WAIT
    return REQUESTS_PER_JOB * one_request


def describe_error(err: BaseException, options: OpenAIOptions, what: str = BACKEND_FLAG) -> str:
    """One line for a failed request, starting with ``what`` (the option naming the server): status,
    the server's message, how many retries were made. A refused parameter names the model's option
    to change only for the model's server (``what`` left as it is)."""
    import openai

    status = getattr(err, "status_code", None)
    who, what = what, f"HTTP {status}" if status else type(err).__name__
    if isinstance(err, asyncio.TimeoutError):
        return (
            f"{who}: {redact(options.base_url or '')} gave no complete answer within "
            f"{job_deadline(options):g} s (--request-timeout bounds each read; the server may be sending "
            "its answer byte by byte); finished items are saved, rerun the same command to resume"
        )
    refusal = sampling.refusal_line(err) if who == BACKEND_FLAG else None
    if refusal is not None:  # a parameter the run sends, tied to an option
        param, said, change = refusal
        lines = clean(said).strip().splitlines()
        return (
            f"{who}: {redact(options.base_url or '')} refused the parameter '{param}' "
            f"({what}: {(lines[0] if lines else '')[:300]}); {change}"
        )
    text = clean(str(getattr(err, "message", None) or err)).strip()
    message = text.splitlines()[0] if text else ""
    if isinstance(err, openai.AuthenticationError):
        hint = f"; check the key in ${options.api_key_env}"
    elif isinstance(
        err,
        (
            openai.RateLimitError,
            openai.InternalServerError,
            openai.APITimeoutError,
            openai.APIConnectionError,
        ),
    ):
        hint = f" after {options.max_retries} retries; finished items are saved, rerun the same command to resume"
    else:
        hint = ""
    return f"{who}: request to {redact(options.base_url or '')} failed ({what}: {message[:300]}){hint}"


def probe(options: OpenAIOptions, name: str) -> ServerFeatures:
    """Ask the server once whether it tokenizes chats and returns prompt log-probabilities, and
    whether its chat template already writes the BOS (then no special tokens are added)."""
    import openai
    from PIL import Image as PILImage

    url = data_url(PILImage.new("RGB", (32, 32), (128, 128, 128)))
    context = render_messages(ChatPrompt(system="", user_text="probe", assistant_prefix="probe"))
    messages = with_image(context, url)
    root = _root(options.base_url)

    async def _server_version(client: Any) -> str | None:
        """The version a vLLM server reports (``GET /version``); ``None`` where it reports none."""
        try:  # optional: a server without the route (a 404, or a 501 that would be retried) has none
            found = await client.with_options(max_retries=0).get(root + "/version", cast_to=object)
        except openai.APIError:
            return None
        value = found.get("version") if isinstance(found, dict) else None
        return clean(value)[:80] if isinstance(value, str) else None

    async def ask(client: Any) -> ServerFeatures:
        try:
            bodies = [
                {"model": name, "messages": messages, **_continue(), "add_special_tokens": add}
                for add in (False, True)
            ]
            plain, special = [
                answers.tokenize_tokens(await client.post(root + "/tokenize", cast_to=object, body=b))
                for b in bodies
            ]
            add = not (
                special[1:] == plain and plain[:1] == special[:1]
            )  # the template wrote the BOS already
            extra = {"add_special_tokens": add, "prompt_logprobs": 0, "return_token_ids": True, **_continue()}
            response = await client.chat.completions.create(
                model=name, messages=messages, max_tokens=1, temperature=0.0, extra_body=extra
            )
        except (openai.NotFoundError, openai.BadRequestError, openai.UnprocessableEntityError):
            return ServerFeatures(prompt_logprobs=False, add_special_tokens=None)
        has = answers.prompt_logprobs(response.model_dump()) is not None
        try:
            reads = has and await server_cache.reads_cache(client, name, {"add_special_tokens": add})
        except (openai.BadRequestError, openai.UnprocessableEntityError):
            reads = False
        return ServerFeatures(
            prompt_logprobs=has,
            add_special_tokens=add,
            reads_cache=reads,
            version=await _server_version(client),
        )

    return call_jobs(options, [ask])[0]


def load_openai(
    name: str, options: OpenAIOptions, *, needs_prompt_logprobs: bool, thinking: str = "auto"
) -> OpenAIModel:
    """Probe the server, refuse a run that needs prompt log-probabilities it does not return;
    ``thinking``: ``--thinking`` (``on``/``off``: sent as ``chat_template_kwargs``)."""
    try:
        import openai  # noqa: F401
    except ImportError:
        raise MMSpuBenchError(
            "--backend openai: the openai package is not installed (pip install 'mm-spubench[api]')"
        ) from None
    features = probe(options, name)
    if needs_prompt_logprobs and not features.prompt_logprobs:
        raise MMSpuBenchError(NO_PROMPT_LOGPROBS)
    # The served name is the identity (a resumed run may reach the same model at another URL);
    # the URL is in results.json's backend settings.
    info = ModelInfo(id=name, path=name, revision=None, dtype="server", adapter="openai-chat")
    return OpenAIModel(name, options, features, info, server_setting(thinking))


def server_style(name: str) -> str:
    """The reasoning style of a served model by its name (:attr:`OpenAIModel.reasoning_style`)."""
    lowered = name.lower()
    if "kimi" in lowered:
        return "kimi"
    return "glm" if "glm" in lowered else "think"
