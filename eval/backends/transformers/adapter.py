"""The one generic adapter: any chat-template model ``AutoModelForImageTextToText`` loads.

Build it with :func:`mmspubench.eval.backends.transformers.loading.load_model`. It implements the
:class:`~mmspubench.eval.protocol.VisionLanguageModel` Protocol:

- ``render`` applies the model's chat template to [system (if non-empty), user: [image, text]]
  with the generation prompt, then appends the assistant prefix;
- ``generate`` answers greedily, in batches, and returns only the new text;
- ``score`` returns the sum of float32 log-probabilities of each continuation's tokens, with the
  fast scorer (``mmspubench.eval.backends.transformers.fast_scoring.score_fast``) when ``scorer == "fast"`` and the
  model's family is exact for it, else with the plain scorer (``mmspubench.eval.backends.transformers.scoring``). That
  choice is made once, here, when the adapter is built: ``scorer_used`` and
  ``scorer_fallback_reason`` say what runs, and ``info`` carries them into results.json.

The scorers read the pieces of :class:`~mmspubench.eval.checkpoint.encoding.ScoringModel` from the adapter:
``model``, ``processor``, ``hooks``, ``batch_size``, ``pad_token_id``, ``accepts_logits_to_keep``
and :meth:`add_special_tokens_for`.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mmspubench.eval.backends.transformers import fast_scoring, scoring
from mmspubench.eval.backends.transformers import output_head as heads
from mmspubench.eval.checkpoint.chat import render_chat, render_text_chat
from mmspubench.eval.checkpoint.decoding import ReplyDecoder, chat_template_of, stop_ids
from mmspubench.eval.checkpoint.encoding import (
    EncodedRequest,
    add_special_tokens_for,
    encode_request,
    to_model,
)
from mmspubench.eval.checkpoint.hooks import FamilyHooks
from mmspubench.eval.checkpoint.prefix_lm import DROPPED_OUTPUTS
from mmspubench.eval.checkpoint.thinking import NOT_THINKING, ThinkingSetting
from mmspubench.eval.config import SCORERS
from mmspubench.eval.environment import model_settings
from mmspubench.eval.protocol import ChatPrompt, FastPath, Generation, ModelInfo, ScoreRequest, ScorerTally
from mmspubench.eval.replies.reasoning import style_for

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = ["FAST_SCORER", "SCORERS", "TEXT_ONLY_PLAIN", "TransformersVLM"]

FAST_SCORER = FastPath(name="the fast scorer", remedy="--scorer plain")
"""The transformers fast scorer as a fast path (:mod:`mmspubench.eval.scorer_check`)."""
TEXT_ONLY_PLAIN = "text-only requests (the blind view) are scored by the plain scorer"
"""Why a run on the fast scorer scores its blind view's requests plain."""


class TransformersVLM:
    """A transformers image-text-to-text model with its processor and family hooks."""

    def __init__(
        self,
        model: Any,
        processor: Any,
        *,
        hooks: FamilyHooks,
        info: ModelInfo,
        batch_size: int = 8,
        scorer: str = "fast",
        thinking: ThinkingSetting = NOT_THINKING,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.model = model
        """The ``PreTrainedModel`` in eval mode, on its device and dtype."""
        self.processor = processor
        """The processor (tokenizer + image processor + chat template)."""
        self.hooks = hooks
        """Family hooks (processor loading, position ids, user-turn layout)."""
        self.batch_size = batch_size
        """Most sequences per forward pass (scoring) or per ``generate`` call."""
        self.thinking = thinking
        """How prompts are rendered for ``--thinking`` (:mod:`~mmspubench.eval.checkpoint.thinking`)."""
        self.scorer_used: str = "plain"
        """The scorer that runs: ``"fast"`` or ``"plain"`` (decided when ``scorer`` is set)."""
        self.scorer_fallback_reason: str | None = None
        """Why the fast scorer was asked for but the plain one runs; ``None`` otherwise."""
        self.scorer_tally = ScorerTally()
        """Requests scored by each scorer so far, and why any were scored plain."""
        tokenizer = processor.tokenizer
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.pad_token_id: int = int(pad if pad is not None else 0)
        """Token id used to pad ``input_ids`` (the value never matters: padded positions are masked)."""
        self.accepts_logits_to_keep: bool = "logits_to_keep" in inspect.signature(model.forward).parameters
        """Whether ``model.forward`` can compute logits for selected positions only."""
        self._info = info
        self._flat_images = False
        self._head: heads.OutputHead | bool | None = False  # False: not probed yet
        self.scorer = scorer

    def note_fallback(self, reason: str) -> None:
        """Record that one call was scored plain for ``reason`` (called by the fast scorer).

        The model stays on the fast scorer; ``scorer_fallback_reason`` (and results.json) then says
        ``"some calls scored plain: ..."`` (e.g. a request longer than a sliding window).
        """
        if self.scorer_fallback_reason is None:
            self.scorer_fallback_reason = f"some calls scored plain: {reason}"

    @property
    def scorer(self) -> str:
        """The scorer asked for: ``"fast"`` (prefix-cached where exact) or ``"plain"`` (full passes)."""
        return self._scorer

    @scorer.setter
    def scorer(self, name: str) -> None:
        """Ask for a scorer; whether the fast one can run for this model is decided here, once."""
        if name not in SCORERS:
            raise ValueError(f"scorer must be one of {SCORERS}, got {name!r}")
        self._scorer = name
        self.scorer_fallback_reason = fast_scoring.fallback_reason(self.model) if name == "fast" else None
        if name == "fast" and self.scorer_fallback_reason is None and self.output_head is None:
            self.scorer_fallback_reason = heads.HEAD_NOT_REPRODUCED
        self.scorer_used = "fast" if name == "fast" and self.scorer_fallback_reason is None else "plain"

    @property
    def output_head(self) -> heads.OutputHead | None:
        """The head the model's forward applies to its last hidden states (probed once, on first
        use: :func:`~mmspubench.eval.backends.transformers.output_head.probe_head`); ``None`` when
        no known head reproduces it."""
        if self._head is False:
            self._head = heads.probe_head(self.model, self.processor.tokenizer)
        assert self._head is not True
        return self._head

    @property
    def info(self) -> ModelInfo:
        """Identity of the model for the result files, with the scorer that runs."""
        return dataclasses.replace(
            self._info, scorer_used=self.scorer_used, scorer_fallback_reason=self.scorer_fallback_reason
        )

    @property
    def family(self) -> str:
        """The model's ``model_type`` (its family, as messages name it)."""
        return self._family()

    @property
    def environment(self) -> dict[str, Any]:
        """What results.json's ``environment`` records of this model: the chat template's and image
        settings' SHA-256 (also in the run's identity), the image settings, the attention
        implementation and the generation settings (greedy; ``max_new_tokens`` is the run's)."""
        text_config = self.model.config.get_text_config()
        return {
            **model_settings(self.processor),
            "attention": getattr(text_config, "_attn_implementation", None),
            "generation": self.generation_settings(),
            **({"thinking": self.thinking.record()} if self.thinking.recorded else {}),
        }

    def generation_settings(self, max_new_tokens: int | None = None) -> dict[str, Any]:
        """The settings ``generate`` runs with: the model's generation config made greedy."""
        config = copy.deepcopy(self.model.generation_config)
        config.update(do_sample=False, num_beams=1, temperature=None, top_p=None, top_k=None)
        if max_new_tokens is not None:
            config.max_new_tokens = max_new_tokens
        config.pad_token_id = self.pad_token_id
        settings = {k: v for k, v in config.to_diff_dict().items() if k != "transformers_version"}
        return {"do_sample": False, "num_beams": 1, **settings}

    def render(self, prompt: ChatPrompt) -> str:
        """Chat template over [system (if non-empty), user: [image, text]] + generation prompt + prefix
        (:func:`~mmspubench.eval.checkpoint.chat.render_chat`)."""
        return render_chat(self.processor, self.hooks, prompt, self.thinking.kwargs_for(prompt.scored))

    text_only = True
    """The blind view's text-only prompts run here: :meth:`render_text`, and ``None`` images in
    ``generate`` and ``score`` (those requests are scored by the plain scorer)."""

    def render_text(self, prompt: ChatPrompt) -> str:
        """The chat of :meth:`render` without the image (the blind view's text-only prompt)."""
        return render_text_chat(self.processor, prompt, self.thinking.kwargs_for(prompt.scored))

    def add_special_tokens_for(self, text: str) -> bool:
        """Whether the tokenizer should add its special tokens (BOS) to ``text``: not when the chat
        template already wrote the BOS at the start, so it is never doubled."""
        return add_special_tokens_for(self.processor, text)

    def encode(self, request: ScoreRequest) -> EncodedRequest:
        """Processor outputs for context + continuation and the context's token count (checked prefix).

        This is the one tokenization every scorer uses; see :func:`mmspubench.eval.checkpoint.encoding.encode_request`.
        """
        return encode_request(
            self.processor, request, add_special_tokens=self.add_special_tokens_for(request.context)
        )

    def generate(
        self, images: Sequence[Image], contexts: Sequence[str], max_new_tokens: int
    ) -> list[Generation]:
        """Greedy answers, ``batch_size`` prompts per call (left-padded), without the prompt text:
        each with its finish reason, its prompt and completion tokens and its batch's time divided
        evenly (:class:`~mmspubench.eval.checkpoint.decoding.ReplyDecoder`)."""

        if len(images) != len(contexts):
            raise ValueError(f"got {len(images)} images for {len(contexts)} contexts")
        config = copy.deepcopy(self.model.generation_config)
        config.update(do_sample=False, num_beams=1, temperature=None, top_p=None, top_k=None)
        config.max_new_tokens = max_new_tokens
        config.pad_token_id = self.pad_token_id
        answers: list[Generation | None] = [None] * len(contexts)
        for with_image in (True, False):  # text-only (blind) prompts in batches of their own
            chosen = [i for i, image in enumerate(images) if (image is not None) == with_image]
            for first in range(0, len(chosen), self.batch_size):
                batch = chosen[first : first + self.batch_size]
                new = self._generate_batch([images[i] for i in batch], [contexts[i] for i in batch], config)
                for index, reply in zip(batch, new, strict=True):
                    answers[index] = reply
        return [a for a in answers if a is not None]

    @property
    def reasoning_style(self) -> str:
        """How the model's replies mark their reasoning (:func:`~mmspubench.eval.replies.reasoning.style_for`
        of its family and chat template)."""
        return style_for(self.family, chat_template_of(self.processor))

    @functools.cached_property
    def decoder(self) -> ReplyDecoder:
        """Decodes the replies, keeping the reasoning markers the tokenizer holds as special tokens."""
        return ReplyDecoder(self.processor, stop_ids(self.model.generation_config, self.processor.tokenizer))

    def _generate_batch(self, images: list[Any], texts: list[str], config: Any) -> list[Generation]:
        """Greedy answers of one batch (all with an image, or all text-only)."""
        import torch

        start = time.perf_counter()
        if images[0] is None:
            kwargs = {"return_tensors": "pt", "padding": True, "padding_side": "left"}
            inputs = self.processor(
                text=texts, add_special_tokens=self.add_special_tokens_for(texts[0]), **kwargs
            )
        else:
            inputs = self._processor_batch(images, texts)
        for key in DROPPED_OUTPUTS:
            inputs.pop(key, None)
        with torch.inference_mode():
            out = self.model.generate(**to_model(inputs, self.model), generation_config=config)
        width = inputs["input_ids"].shape[1]
        mask = inputs.get("attention_mask")
        prompts = [width] * len(texts) if mask is None else [int(m) for m in mask.sum(dim=1).tolist()]
        rows = out[:, width:].tolist()
        return self.decoder.generations(rows, config.max_new_tokens, prompts, time.perf_counter() - start)

    def _processor_batch(self, images: list[Image], texts: list[str]) -> Any:
        """Processor outputs for one image per prompt, left-padded.

        Processors disagree on how a batch's images are laid out: most take one list per prompt
        (some read a flat list as one prompt's images), GOT-OCR2 refuses nested lists. The nested
        layout is tried first; when the processor rejects it, the flat one is used from then on.
        """
        kwargs = {
            "return_tensors": "pt",
            "padding": True,
            "padding_side": "left",
            "add_special_tokens": self.add_special_tokens_for(texts[0]),
        }
        if self._flat_images:
            return self.processor(images=images, text=texts, **kwargs)
        try:
            return self.processor(images=[[image] for image in images], text=texts, **kwargs)
        except ValueError as nested_error:
            try:
                inputs = self.processor(images=images, text=texts, **kwargs)
            except ValueError:
                raise nested_error from None
        self._flat_images = True
        return inputs

    def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        """Sum of float32 log-probabilities of each continuation's tokens given image and context
        (a request without an image, the blind view's, by the plain scorer)."""
        if not requests:
            return []
        blind = [i for i, r in enumerate(requests) if r.image is None]
        if blind:
            scores = [0.0] * len(requests)
            seen = [i for i, r in enumerate(requests) if r.image is not None]
            text_only = scoring.score_plain(self, [requests[i] for i in blind])
            self.scorer_tally.add("plain", len(blind), TEXT_ONLY_PLAIN if self.scorer == "fast" else None)
            for indices, values in ((blind, text_only), (seen, self.score([requests[i] for i in seen]))):
                for index, value in zip(indices, values, strict=True):
                    scores[index] = value
            return scores
        reason = self.scorer_fallback_reason
        if self.scorer_used == "fast":
            try:
                scores = list(fast_scoring.score_fast(self, requests))
            except fast_scoring.CallNotExact as err:  # e.g. a request longer than a sliding window
                reason = str(err)
                self.note_fallback(reason)
                fast_scoring.log_fallback(self._family(), reason)
            else:
                self.scorer_tally.add("fast", len(requests))
                return scores
        elif reason is not None:
            fast_scoring.log_fallback(self._family(), reason)
        scores = scoring.score_plain(self, requests)
        self.scorer_tally.add("plain", len(requests), reason)
        return scores

    @property
    def fast_path(self) -> FastPath | None:
        """The fast scorer while it runs for this model (checked by the runner against
        :meth:`reference_score` on a run's first items), else ``None``."""
        return FAST_SCORER if self.scorer_used == "fast" else None

    def reference_score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        """The plain scorer's scores of ``requests`` (one full forward pass per request): the
        computation the fast scorer replaces, for the runner's check of it."""
        return scoring.score_plain(self, requests)

    def _family(self) -> str:
        return str(getattr(getattr(self.model, "config", None), "model_type", "?"))


# END
