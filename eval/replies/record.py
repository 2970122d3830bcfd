"""What a generated reply's sample records beside its ``raw_output``: :class:`ReplyReading`.

The fields are written to samples.jsonl (at the level of the answer they describe: a sample line,
a rotation, the blind answer, an intervention's answer) ONLY when they say something the line
does not already say, so that the lines of a run without reasoning and without a judge are
those of before, apart from ``tokens`` and ``seconds``:

- ``reasoning``: the reasoning (inline block or the server's ``reasoning_content``); when set.
- ``answer_text``: the text the answer was read from; only when it is not ``raw_output`` with its
  surrounding whitespace removed (absent: it is).
- ``truncated``: ``true`` only, when the reply was cut inside its reasoning (absent: false).
- ``read_by``: ``parser``, ``judge`` or ``none``; absent where it is implied: a reply without
  reasoning, not truncated, read ``parser`` when it has a prediction and ``none`` when not.
- ``judge``: the judge's reply as it said it (``--extract judge``), only on an answer the judge was
  asked about (the parser read nothing); ``submit`` reads it again by the verdict rule
  (:func:`~mmspubench.eval.replies.judge.read_verdict`) and refuses an answer it does not give.
- ``tokens``: ``{"prompt": n, "completion": n, "reasoning": n}`` as the engine counted them (the
  tokenizer locally, ``usage`` from a server); ``reasoning`` only where known; absent when the
  engine counted nothing.
- ``seconds``: the wall time of the reply's request (the OpenAI-compatible backend: each request
  is timed), or of its batch divided evenly among the batch's replies (transformers: each
  ``batch_size`` batch; vLLM: the one engine call); absent for an engine that returns plain
  strings (a plug-in, a test fake), whose replies are not timed. It differs between any two runs,
  so comparisons of runs set it aside as they set aside the run stamp.

:meth:`ReplyReading.read` checks every field once, where samples.jsonl is read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mmspubench.eval.replies.reading import READ_PATHS

READING_KEYS = ("reasoning", "answer_text", "truncated", "read_by", "judge", "tokens", "seconds")
"""The optional keys of a generated answer in samples.jsonl (module doc)."""
TOKEN_KEYS = ("prompt", "completion", "reasoning")
"""The keys of ``tokens``; ``reasoning`` may be absent."""


@dataclass(frozen=True, slots=True)
class Tokens:
    """Tokens of one request, as the engine counted them."""

    prompt: int | None
    """Tokens of the prompt (image tokens included); ``None`` when not counted."""
    completion: int | None
    """Generated tokens, reasoning included; ``None`` when not counted."""
    reasoning: int | None
    """Of the generated tokens, the reasoning's; ``None`` when not known."""

    def to_json(self) -> dict[str, int]:
        """The counted ones only."""
        return {k: v for k in TOKEN_KEYS if (v := getattr(self, k)) is not None}

    @property
    def counted(self) -> bool:
        """Whether any count is known."""
        return any(getattr(self, k) is not None for k in TOKEN_KEYS)


@dataclass(frozen=True, slots=True)
class ReplyReading:
    """How a generated reply was read, and what it cost (module doc)."""

    answer_text: str
    """The text the answer was read from (after the reasoning only); ``""`` when truncated."""
    read_by: str
    """``parser``, ``judge`` or ``none`` (:data:`~mmspubench.eval.replies.reading.READ_PATHS`)."""
    reasoning: str | None = None
    """The reply's reasoning; ``None`` when it had none."""
    truncated: bool = False
    """Cut by the token budget inside its reasoning: never parsed, counted apart from unparsed."""
    tokens: Tokens | None = None
    """Its tokens; ``None`` when the engine counted none."""
    seconds: float | None = None
    """Wall time of its request, or its share of its batch (module doc); ``None`` when unknown."""
    judge: str | None = None
    """The judge's reply where the judge was asked about this answer; ``None`` where it was not."""

    def to_json(self, prediction: str | None, raw_output: str) -> dict[str, Any]:
        """The keys that say something the answer's ``prediction`` and ``raw_output`` do not."""
        out: dict[str, Any] = {}
        if self.reasoning is not None:
            out["reasoning"] = self.reasoning
        if self.answer_text != raw_output.strip():
            out["answer_text"] = self.answer_text
        if self.truncated:
            out["truncated"] = True
        if self.read_by != implied_read_by(prediction, self.reasoning, self.truncated):
            out["read_by"] = self.read_by
        if self.judge is not None:
            out["judge"] = self.judge
        if self.tokens is not None and self.tokens.counted:
            out["tokens"] = self.tokens.to_json()
        if self.seconds is not None:
            out["seconds"] = self.seconds
        return out

    @staticmethod
    def read(obj: Mapping[str, Any], name: str, prediction: str | None, raw_output: str) -> ReplyReading:
        """The reading of an answer whose line (or object) is ``obj``; ``name`` prefixes the field
        named by an error (``""`` for a sample line, ``"blind."``, ``"rotations[2]."``)."""
        reasoning = obj.get("reasoning")
        if reasoning is not None and not isinstance(reasoning, str):
            raise TypeError(f"field {name + 'reasoning'!r} must be a string, got {_shown(reasoning)}")
        answer_text = obj.get("answer_text", raw_output.strip())
        if not isinstance(answer_text, str):
            raise TypeError(f"field {name + 'answer_text'!r} must be a string, got {_shown(answer_text)}")
        truncated = obj.get("truncated", False)
        if (truncated is not False and truncated is not True) or ("truncated" in obj and not truncated):
            raise ValueError(
                f"field {name + 'truncated'!r} must be true (or absent), got {_shown(truncated)}"
            )
        read_by = obj.get("read_by", implied_read_by(prediction, reasoning, truncated))
        if "read_by" not in obj and read_by is None:
            raise ValueError(
                f"field {name + 'read_by'!r} is missing; an answer with reasoning or truncated records it"
            )
        if read_by not in READ_PATHS:
            raise ValueError(
                f"field {name + 'read_by'!r} must be one of {', '.join(READ_PATHS)}, got {_shown(read_by)}"
            )
        if (read_by == "none") != (prediction is None) or (truncated and read_by != "none"):
            raise ValueError(
                f"field {name + 'read_by'!r} is {read_by!r} but the prediction is {prediction!r}"
                + (" and the reply truncated" if truncated else "")
            )
        judge = obj.get("judge")
        if judge is not None and not isinstance(judge, str):
            raise TypeError(
                f"field {name + 'judge'!r} must be the judge's reply (a string), got {_shown(judge)}"
            )
        tokens = None if obj.get("tokens") is None else read_tokens(obj["tokens"], f"{name}tokens")
        seconds = obj.get("seconds")
        if seconds is not None:
            seconds = _seconds(seconds, f"{name}seconds")
        return ReplyReading(answer_text, read_by, reasoning, truncated, tokens, seconds, judge)


def reading_json(
    reading: ReplyReading | None, prediction: str | None, raw_output: str | None
) -> dict[str, Any]:
    """The reading's keys of an answer's JSON (none without a reading or a raw output)."""
    return {} if reading is None or raw_output is None else reading.to_json(prediction, raw_output)


def read_reading(
    obj: Mapping[str, Any], name: str, prediction: str | None, raw_output: str | None
) -> ReplyReading | None:
    """An answer's reading (module doc), ``None`` when its line has none of the reading's
    keys (a line written before them: :func:`mmspubench.eval.records.reading_of` gives the reading they imply); a reading
    key on an answer without ``raw_output`` is refused."""
    found = [k for k in READING_KEYS if k in obj]
    if not found:
        return None
    if raw_output is None:
        raise ValueError(f"field {name + found[0]!r} is set on an answer without raw_output")
    return ReplyReading.read(obj, name, prediction, raw_output)


def implied_read_by(prediction: str | None, reasoning: str | None, truncated: bool) -> str | None:
    """``read_by`` a line leaves out (module doc): ``parser``/``none`` by the prediction, for a
    reply without reasoning that was not truncated; ``None`` (always written) otherwise."""
    if reasoning is not None or truncated:
        return None
    return "parser" if prediction is not None else "none"


def read_tokens(value: Any, name: str) -> Tokens:
    """``tokens``: an object of non-negative counts with keys of :data:`TOKEN_KEYS` only, the
    reasoning's not above the completion's."""
    if not isinstance(value, Mapping) or not value:
        raise TypeError(f"field {name!r} must be an object of token counts, got {_shown(value)}")
    unknown = sorted(str(k) for k in value if k not in TOKEN_KEYS)
    if unknown:
        raise ValueError(
            f"field {name!r}: unknown key {unknown[0][:40]!r} (expected {', '.join(TOKEN_KEYS)})"
        )
    for key, count in value.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ValueError(
                f"field {name + '.' + key!r} must be a count (an integer >= 0), got {_shown(count)}"
            )
    tokens = Tokens(value.get("prompt"), value.get("completion"), value.get("reasoning"))
    if (
        tokens.reasoning is not None
        and tokens.completion is not None
        and tokens.reasoning > tokens.completion
    ):
        raise ValueError(
            f"field {name + '.reasoning'!r} is {tokens.reasoning}, more than the completion's {tokens.completion}"
        )
    return tokens


def _seconds(value: Any, name: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(f"field {name!r} must be a number of seconds >= 0, got {_shown(value)}")
    return float(value)


def _shown(value: Any) -> str:
    """``value`` for an error line: its repr cut to 40 characters."""
    text = repr(value) if isinstance(value, (int, float, str, bool, type(None))) else type(value).__name__
    return f"{text[:40]}{'...' * (len(text) > 40)}"
