"""Processors that add text around the prompt: prefix-LM encoding and the diagnosis when they do.

PaliGemma's processor turns a prompt into ``<image>... <bos> prompt "\\n"`` and takes the answer as a
separate ``suffix``: the prompt (with the image) is the model's bidirectional prefix, the answer is
decoded causally after it. Joining context and continuation into one text would put the
continuation inside the prefix, before the added newline, and the context would not be a token
prefix of the joined text. :func:`encode_prefix_lm` scores the continuation as the processor's
suffix instead: exactly the tokens the model would decode as its answer, after the full prompt.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from mmspubench.errors import MMSpuBenchError

if TYPE_CHECKING:
    from mmspubench.eval.checkpoint.encoding import EncodedRequest
    from mmspubench.eval.protocol import ScoreRequest

PLAIN_PROMPT_TEMPLATE = (
    "{image}{{% for message in messages %}}{{% for item in message['content'] %}}"
    "{{% if item['type'] == 'text' %}}{{{{ item['text'] }}}}{{% endif %}}{{% endfor %}}"
    "{{% if not loop.last %}}{{{{ '\\n' }}}}{{% endif %}}{{% endfor %}}"
    "{{% if add_generation_prompt %}}{{{{ '\\n' }}}}{{% endif %}}"
)
"""The prompt of a prefix LM without a chat template (PaliGemma's checkpoints ship none): the image
placeholder, then the texts (system, user) one per line, then a line break before the assistant
prefix; the processor adds BOS after the image and a newline at the end."""

DROPPED_OUTPUTS = ("labels",)
"""Processor outputs that are training targets, never model inputs at evaluation."""


def is_prefix_lm(processor: Any) -> bool:
    """Whether the processor takes the answer as a separate ``suffix`` (PaliGemma-style prefix LM):
    a ``suffix`` argument of its ``__call__`` (transformers 5.23 on), or a ``suffix`` among the
    text options its ``valid_processor_kwargs`` declare (5.19-5.22, where it came through ``**kwargs``)."""
    if not callable(processor):
        return False
    if "suffix" in inspect.signature(type(processor).__call__).parameters:
        return True
    declared = getattr(getattr(type(processor), "valid_processor_kwargs", None), "__annotations__", {})
    return "suffix" in getattr(declared.get("text_kwargs"), "__annotations__", {})


def plain_prompt_template(processor: Any) -> str:
    """:data:`PLAIN_PROMPT_TEMPLATE` with the processor's image placeholder."""
    return PLAIN_PROMPT_TEMPLATE.format(image=processor.image_token)


def encode_prefix_lm(processor: Any, request: ScoreRequest, *, add_special_tokens: bool) -> EncodedRequest:
    """Context as the processor's prompt, continuation as its suffix (see module doc).

    The continuation tokens are those the processor marks as suffix (``token_type_ids == 1``) without
    the end-of-sequence token it appends; the prompt alone must encode to the same leading tokens.
    """
    from mmspubench.eval.checkpoint.encoding import EncodedRequest
    from mmspubench.eval.checkpoint.hooks import SEQUENCE_KEYS

    kwargs = {"return_tensors": "pt", "add_special_tokens": add_special_tokens}
    full = processor(images=[request.image], text=[request.context], suffix=[request.continuation], **kwargs)
    ctx = processor(images=[request.image], text=[request.context], **kwargs)
    types = [int(t) for t in full["token_type_ids"][0]]
    n_ctx = types.index(1) if 1 in types else len(types)
    n_full = len(types)
    eos = processor.tokenizer.eos_token_id
    while n_full > n_ctx and int(full["input_ids"][0, n_full - 1]) == eos:
        n_full -= 1
    if n_full <= n_ctx:
        raise MMSpuBenchError(
            f"continuation {request.continuation!r}: adds no token after the context; expected a non-empty text"
        )
    if full["input_ids"][0, :n_ctx].tolist() != ctx["input_ids"][0].tolist():
        raise MMSpuBenchError(
            f"context ending {request.context[-40:]!r}: the processor encodes the prompt differently with and "
            "without an answer suffix; the continuation's tokens cannot be located"
        )
    inputs = {
        k: (v[:, :n_full] if k in SEQUENCE_KEYS else v) for k, v in full.items() if k not in DROPPED_OUTPUTS
    }
    return EncodedRequest(inputs=inputs, n_context=n_ctx)


def appended_tail(ctx: list[int], full: list[int]) -> int:
    """Number of tokens a processor appends after every prompt, seen in two encodings, else 0.

    ``ctx`` ends with ``k`` tokens that ``full`` also ends with, and without them ``ctx`` is a prefix
    of ``full``: the processor added them after both texts (PaliGemma's newline).
    """
    for k in range(1, len(ctx)):
        if ctx[-k:] == full[-k:] and full[: len(ctx) - k] == ctx[:-k]:
            return k
    return 0


def appended_text_error(request: ScoreRequest, tail: list[str]) -> MMSpuBenchError:
    """The error for a processor that appends ``tail`` after every prompt (and takes no suffix)."""
    return MMSpuBenchError(
        f"continuation {request.continuation!r}: the model's processor appends {tail} after every prompt, so "
        "context + continuation does not extend the context's tokens and the continuation cannot be scored "
        "as the model's answer; this family needs its own encoding (as PaliGemma's suffix)"
    )
