"""``--extract judge``: a judge model reads the answers the strict parser leaves unparsed.

The strict parser (:mod:`~mmspubench.eval.replies.parse`) stays the default and its rules stay.
With ``--extract judge`` (generate mode only) a reply the parser reads nothing from, and that is not
cut inside its reasoning, is shown to a judge model on any OpenAI-compatible chat-completions
server (``--judge-model`` on ``--judge-base-url``, its key in the variable ``--judge-api-key-env``
names), with a fixed prompt (:data:`JUDGE_PROMPT_VERSION`, :func:`judge_messages`): the question,
the options A-D and the model's answer text, asking for one letter or ``none``.

The judge's reply is read strictly (:func:`read_verdict`): after removing surrounding whitespace,
punctuation and markdown marks (``" c."``, ``"(B)"``, ``"**D**"``, ``"None."``), it must be exactly
one of the letters of the options or ``none`` (any case). Anything else (``"Answer: C"``,
``"C) a kite"``, an empty reply, a reply cut by its token budget) is the outcome ``junk``: the
answer is read as ``None`` (unparsed, scored wrong) and the judge's reply is kept, not guessed at.
A server answer that is no chat completion at all (an HTML page, a number, no choices, a content
that is not a string) is no verdict: it stops the run in one line (:data:`JUDGE_FAULT`).

Requests go through the ``--backend openai`` client (:func:`~mmspubench.eval.backends.openai.client.call_jobs`:
key from the environment, retries of 429s, 5xx and lost connections with backoff, a deadline per
request), at temperature 0 with a budget of :data:`JUDGE_MAX_TOKENS` (``max_completion_tokens``,
falling back to ``max_tokens``, and no temperature where the judge refuses it: found out on the
first request as for the model, :mod:`~mmspubench.eval.backends.openai.sampling`). A judge that is
down, or fails a request after its retries, stops the run with one line naming ``--judge-base-url``
(exit 2); :func:`judge_for` asks it once before the run starts, so a judge down from the start
stops the run before any answer is written.

The judge's :attr:`JudgeClient.identity` (model, base URL, prompt version) is in the run's identity
(the config fields ``extract``, ``judge_model``, ``judge_base_url``, ``judge_prompt``): a resume
with another judge is refused; results.json's ``judge`` records it (:func:`judge_record`).
"""

from __future__ import annotations

import string
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.backends.api_key import DEFAULT_KEY_ENV, check_key_env, read_api_key
from mmspubench.options import flag
from mmspubench.redact import clean, looks_like_secret, redact

if TYPE_CHECKING:
    from mmspubench.eval.config import RunConfig

EXTRACTORS = ("parser", "judge")
"""``--extract``'s values: the strict parser alone (default), or the parser then the judge."""
JUDGE_PROMPT_VERSION = "judge-v1"
"""The version of :data:`JUDGE_SYSTEM` and :data:`JUDGE_TEMPLATE`; changed with any word of them."""
JUDGE_MAX_TOKENS = 16
"""The judge's token budget: a letter or ``none`` (a reasoning judge model may spend it thinking: junk)."""
JUDGE_RETRIES = 5
"""Retries of a judge request (429, 5xx, timeout, lost connection), as ``--max-retries``' default."""
JUDGE_TIMEOUT = 120.0
"""Seconds per judge request before it is retried."""
MAX_KEPT = 500
"""The most characters of a judge's reply kept with a ``junk`` outcome."""
JUDGE_FLAG = "--judge-base-url"
"""What a failed judge request's one line starts with."""
JUDGE_FAULT = f"{JUDGE_FLAG}: the judge server's answer is not usable"
"""How a line about a judge answer that is no chat completion begins (an HTML page, a number,
no choices, a content that is not a string); an empty content is a ``junk`` verdict."""
JUDGE_OPTIONS = ("judge_model", "judge_base_url", "judge_api_key_env")
"""The options that only ``--extract judge`` takes."""

JUDGE_SYSTEM = (
    "You read which option a multiple-choice answer chose. Reply with one letter (A, B, C or D) "
    "or the word none, and nothing else."
)
"""The judge's system message."""
JUDGE_TEMPLATE = (
    "Question: {question}\n"
    "Options:\n{options}\n"
    "Answer given:\n<<<\n{answer}\n>>>\n"
    "Which option does the answer given choose? Reply with its letter alone. Reply none if it "
    "chooses no option, chooses more than one, refuses, or does not finish."
)
"""The judge's user message; ``options`` is one ``A. text`` line per option."""

Outcome = Literal["letter", "none", "junk"]
_STRIP = string.whitespace + string.punctuation


@dataclass(frozen=True, slots=True)
class Verdict:
    """One judge reply, read strictly."""

    letter: str | None
    """The letter read (one of the options'), else ``None``."""
    outcome: Outcome
    """``letter``; ``none`` (the judge said none); ``junk`` (the reply is neither)."""
    reply: str
    """The judge's reply (terminal controls and secrets masked; at most :data:`MAX_KEPT` characters)."""


def read_verdict(reply: str | None, n_options: int = 4) -> Verdict:
    """The verdict of a judge reply: exactly a letter of the options or ``none``, surrounded by any
    whitespace, punctuation and markdown marks, any case; ``junk`` otherwise (``None``: no text).
    The reply is read as it is kept (terminal controls removed, cut to :data:`MAX_KEPT`), so the
    kept reply, recorded in the sample, reads again to the same verdict."""
    kept = clean(redact(reply or ""))[:MAX_KEPT]
    core = kept.strip(_STRIP)  # what is kept is what is read: submit reads the kept reply again
    if len(core) == 1 and core.upper() in "ABCD"[:n_options]:
        return Verdict(core.upper(), "letter", kept)
    if core.lower() == "none":
        return Verdict(None, "none", kept)
    return Verdict(None, "junk", kept)


def judge_messages(question: str, options: Sequence[str], answer_text: str) -> list[dict[str, str]]:
    """The chat messages of one judge request."""
    lines = "\n".join(f"{letter}. {text}" for letter, text in zip("ABCD", options, strict=False))
    user = JUDGE_TEMPLATE.format(question=question, options=lines, answer=answer_text)
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]


class JudgeClient:
    """A judge model behind an OpenAI-compatible chat-completions server (:class:`~mmspubench.eval.replies.reading.Judge`)."""

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key_env: str,
        *,
        max_retries: int = JUDGE_RETRIES,
        request_timeout: float = JUDGE_TIMEOUT,
    ) -> None:
        from mmspubench.eval.backends.openai import Options
        from mmspubench.eval.backends.openai.sampling import Sampling

        self.model = model
        """The judge model's name on its server."""
        self.options = Options(
            base_url=base_url,
            api_key_env=api_key_env,
            max_concurrency=1,
            max_retries=max_retries,
            request_timeout=request_timeout,
        )
        """The client's settings (the ``--backend openai`` options' type)."""
        self.identity: Mapping[str, str] = judge_identity(model, base_url)
        """Model, base URL (credentials masked), prompt version."""
        self.sampling = Sampling()
        """How requests are sent (temperature 0 unless refused; the budget's parameter)."""
        self._sampling_found = False
        self.last: Verdict | None = None
        """The verdict of the last :meth:`read` (its outcome and the judge's reply, for the sample)."""
        self.requests = 0
        """Requests answered."""

    def read(self, question: str, options: Sequence[str], answer_text: str) -> str | None:
        """The letter the judge reads from ``answer_text``; ``None`` for ``none`` or junk (:attr:`last`)."""
        self.last = self.verdict(question, options, answer_text)
        return self.last.letter

    @property
    def last_reply(self) -> str | None:
        """The reply of the last :meth:`read` (masked, at most :data:`MAX_KEPT` characters)."""
        return None if self.last is None else self.last.reply

    def verdict(self, question: str, options: Sequence[str], answer_text: str) -> Verdict:
        """One judge request, its reply read by :func:`read_verdict`."""
        from mmspubench.eval.backends.openai.client import call_jobs

        messages = judge_messages(question, options, answer_text)
        content = call_jobs(self.options, [self._job(messages)], what=JUDGE_FLAG)[0]
        self.requests += 1
        return read_verdict(content, len(options))

    def check(self) -> None:
        """Ask the judge once (a fixed answer): a judge that is down stops the run before it starts."""
        self.verdict("Which is shown?", ["a kite", "a boat", "a tree", "a cup"], "It is a boat.")

    def _job(self, messages: list[dict[str, str]]) -> Callable[[Any], Awaitable[str | None]]:
        async def run(client: Any) -> str | None:
            from mmspubench.eval.backends.openai.server_answers import answer_text

            # A body that is no chat completion is the server's fault, not the judge's verdict.
            return answer_text(await self._create(client, messages), "judge's reply", JUDGE_FAULT)

        return run

    async def _create(self, client: Any, messages: list[dict[str, str]]) -> Any:
        """One request; the first finds out whether the judge takes temperature 0 and the budget's name."""
        import openai
        from mmspubench.eval.backends.openai import sampling

        while True:
            params = sampling.request_params(self.sampling, JUDGE_MAX_TOKENS, None, {})
            try:
                response = await client.chat.completions.create(model=self.model, messages=messages, **params)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as err:
                found = None if self._sampling_found else sampling.adjusted(self.sampling, err)
                if found is None:
                    raise
                self.sampling = found
                continue
            self._sampling_found = True
            return response


def judge_identity(model: str, base_url: str) -> dict[str, str]:
    """A judge's identity: model, base URL (credentials masked), prompt version."""
    return {"model": model, "base_url": redact(base_url), "prompt_version": JUDGE_PROMPT_VERSION}


def check_extract(config: RunConfig) -> None:
    """``--extract`` and the judge options, checked once by ``RunConfig.validate`` (one line each)."""
    if config.extract != "judge":
        for name in JUDGE_OPTIONS:
            if getattr(config, name) != _DEFAULTS[name]:
                raise MMSpuBenchError(f"{flag(name)} is used only with --extract judge")
        if config.judge_prompt is not None:
            raise MMSpuBenchError("judge_prompt is set only by --extract judge")
        return
    if config.answer_mode != "generate":
        raise MMSpuBenchError(
            f"--extract judge reads generated answers; it needs --answer-mode generate, got {config.answer_mode}"
        )
    if "accuracy" not in config.metrics:
        raise MMSpuBenchError(
            f"--extract judge reads the answers of --metrics accuracy, not asked for in --metrics {','.join(config.metrics)}"
        )
    if not config.judge_model:
        raise MMSpuBenchError(
            "--extract judge needs --judge-model NAME (the judge's model name on its server)"
        )
    if not config.judge_base_url:
        raise MMSpuBenchError(
            "--extract judge needs --judge-base-url URL (an OpenAI-compatible server, e.g. http://127.0.0.1:8001/v1)"
        )
    if config.judge_prompt != JUDGE_PROMPT_VERSION:
        raise MMSpuBenchError(
            f"judge_prompt {config.judge_prompt!r}: this version asks the judge with prompt {JUDGE_PROMPT_VERSION}"
        )
    _check_url(config.judge_base_url)
    check_key_env(config.judge_api_key_env, "--judge-api-key-env")
    read_api_key(config.judge_api_key_env, "--judge-api-key-env")  # an unset variable: refused before work


def _check_url(url: str) -> None:
    """The URL is recorded in results.json and the run's identity: it may carry no credential."""
    if not url.startswith(("http://", "https://")):
        raise MMSpuBenchError(f"--judge-base-url {clean(url)[:200]!r}: expected an http:// or https:// URL")
    if looks_like_secret(url):
        raise MMSpuBenchError(
            "--judge-base-url holds a credential (not shown; the URL is recorded): put the key in "
            "an environment variable and name it with --judge-api-key-env"
        )


_DEFAULTS: dict[str, str | None] = {
    "judge_model": None,
    "judge_base_url": None,
    "judge_api_key_env": DEFAULT_KEY_ENV,
}


def judge_for(config: RunConfig, *, max_retries: int = JUDGE_RETRIES) -> JudgeClient | None:
    """The run's judge (``None`` without ``--extract judge``), asked once: one line if it is down."""
    if config.extract != "judge":
        return None
    assert config.judge_model is not None and config.judge_base_url is not None  # validate() checked
    judge = JudgeClient(
        config.judge_model, config.judge_base_url, config.judge_api_key_env, max_retries=max_retries
    )
    judge.check()
    return judge


def judge_record(config: RunConfig) -> dict[str, Any] | None:
    """results.json's ``judge``: the identity, the key's variable name and the budget; ``None``
    without ``--extract judge``."""
    if config.extract != "judge" or config.judge_model is None or config.judge_base_url is None:
        return None
    return {
        **judge_identity(config.judge_model, config.judge_base_url),
        "api_key_env": config.judge_api_key_env,
        "max_tokens": JUDGE_MAX_TOKENS,
    }
