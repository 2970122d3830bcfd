"""Versioned annotation prompt and the JSON schema every backend holds the model's answer to.

Like ``mmspubench.eval.prompts``: every text is written into ``provenance.jsonl`` with
``PROMPT_VERSION``; bump the version whenever a text or the schema changes.

The model writes the attributes, the types and the question; the four options are composed in
code from the true class and the three classes CLIP ranked highest above it (the paper's
"misleading options from the misclassified labels"), so they are exact and never invented.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Sequence
from typing import Any

from mmspubench.dataset_builder.schema import (
    MAX_ATTRIBUTES,
    MAX_TYPES,
    MIN_ATTRIBUTES,
    MIN_TYPES,
    SPURIOUS_TYPES,
    TYPE_NAMES,
)

PROMPT_VERSION = "1"
"""Version of the texts and the schema below."""

SYSTEM = (
    "You write items of MM-SpuBench, a benchmark of spurious biases in vision-language models. "
    "Answer with one JSON object that follows the given schema, nothing else."
)
"""System message."""

TYPE_LINES = "\n".join(f"- {t.name}: {t.title}" for t in SPURIOUS_TYPES)

USER = (
    "The main object in this image is: {class_name}.\n"
    "A zero-shot image classifier ranked these classes above the true one: {confusions}.\n"
    "1. core_attributes: 1 to 5 attributes that define a {class_name} (from the true label).\n"
    "2. spurious_attributes: 1 to 5 attributes visible in this image that are not essential to a "
    "{class_name} but fit the misclassified classes (background, texture, nearby objects, size, "
    "colour, orientation, lighting, viewpoint, shape).\n"
    "3. spurious_types: 1 or 2 of these types that the spurious attributes belong to:\n{types}\n"
    "4. question: a question that describes the object only by its spurious attributes and its "
    "position in the image, and asks what the object is. Do not name the object.\n"
    "Think first in the reasoning field. Use plain text without quotes or backslashes."
)
"""User text; the image comes first in the user turn, then this text."""

MAX_TEXT = {"reasoning": 400, "attribute": 80, "question": 300}
"""Longest text of each kind (bounds every generation, also a random model's)."""


def _text(max_length: int) -> dict[str, Any]:
    """A one-line text of 1 to ``max_length`` characters, first character not a space.

    The validators reject empty texts; quotes and backslashes are left out so that every
    backend's JSON escaping is trivial. The length bound is written as blocks of at most 100
    (``x{0,r}(x{100}){0,q}``): some xgrammar versions (0.2.8, in vLLM 0.32) cannot compile one
    bounded repetition much longer than 128.
    """
    rest, body = max_length - 1, '[^"\\\\\\n]'
    blocks, tail = divmod(rest, _BLOCK)
    pattern = f'^[^\\s"\\\\]{body}{{0,{tail}}}'
    if blocks:
        pattern += f"({body}{{{_BLOCK}}}){{0,{blocks}}}"
    return {"type": "string", "pattern": pattern + "$"}


_BLOCK = 100


def _attributes() -> dict[str, Any]:
    return {
        "type": "array",
        "items": _text(MAX_TEXT["attribute"]),
        "minItems": MIN_ATTRIBUTES,
        "maxItems": MAX_ATTRIBUTES,
    }


def type_choices() -> list[list[str]]:
    """Every allowed ``spurious_types`` value: one type, or two different ones in canonical order.

    Listing them (9 + 36 arrays) keeps duplicates out by construction: constrained decoders and
    APIs do not all honour ``uniqueItems``.
    """
    sizes = range(MIN_TYPES, MAX_TYPES + 1)
    return [list(combo) for size in sizes for combo in itertools.combinations(TYPE_NAMES, size)]


def response_schema() -> dict[str, Any]:
    """The JSON schema of one answer (chain of thought first, then the fields)."""
    return {
        "type": "object",
        "properties": {
            "reasoning": _text(MAX_TEXT["reasoning"]),
            "core_attributes": _attributes(),
            "spurious_attributes": _attributes(),
            "spurious_types": {"enum": type_choices()},
            "question": _text(MAX_TEXT["question"]),
        },
        "required": ["reasoning", "core_attributes", "spurious_attributes", "spurious_types", "question"],
        "additionalProperties": False,
    }


@functools.cache
def _text_regex(kind: str) -> re.Pattern[str]:
    pattern = _text(MAX_TEXT[kind])["pattern"]
    return re.compile(pattern.removeprefix("^").removesuffix("$"))


def _text_problem(value: Any, kind: str) -> str | None:
    if not isinstance(value, str):
        return f"{type(value).__name__} given; expected a text"
    if _text_regex(kind).fullmatch(value) is None:
        return (
            f"a text of {len(value)} characters; the schema allows 1 to {MAX_TEXT[kind]} on one line, "
            "not starting with a space, without quotes or backslashes"
        )
    return None


def answer_problem(answer: dict[str, Any]) -> str | None:
    """Why a parsed answer breaks :func:`response_schema` (a server may not enforce it), or ``None``."""
    properties = response_schema()["properties"]
    missing, extra = sorted(set(properties) - set(answer)), sorted(set(answer) - set(properties))
    if missing or extra:
        return f"field {(missing or extra)[0]!r} {'missing' if missing else 'is not in the schema'}"
    texts = [("reasoning", answer["reasoning"], "reasoning"), ("question", answer["question"], "question")]
    for name in ("core_attributes", "spurious_attributes"):
        value = answer[name]
        if not isinstance(value, list) or not MIN_ATTRIBUTES <= len(value) <= MAX_ATTRIBUTES:
            return f"field {name!r}: expected a list of {MIN_ATTRIBUTES} to {MAX_ATTRIBUTES} attributes"
        texts += [(name, item, "attribute") for item in value]
    for name, value, kind in texts:
        problem = _text_problem(value, kind)
        if problem is not None:
            return f"field {name!r}: {problem}"
    if answer["spurious_types"] not in type_choices():
        return f"field 'spurious_types': {answer['spurious_types']!r} is not one of the allowed sets"
    return None


def user_text(class_name: str, confusions: Sequence[str]) -> str:
    """The user text for one candidate."""
    return USER.format(class_name=class_name, confusions=", ".join(confusions), types=TYPE_LINES)


def prompt_spec() -> dict[str, Any]:
    """Every text and the schema with the version, as written into provenance."""
    return {"version": PROMPT_VERSION, "system": SYSTEM, "user": USER, "schema": response_schema()}
