"""SWEEP.yaml as YAML: strict where PyYAML is lenient.

``yaml.safe_load`` keeps the last of two equal keys (``models:`` written twice silently drops the
first list), reports a syntax error without saying where, and expands aliases without bound (a
"billion laughs" file of a few lines is billions of nodes once a caller walks it). Here a key
written twice in one mapping is refused with both lines, a syntax error names its line and column,
and a file whose aliases expand to more than :data:`MAX_NODES` nodes is refused before it is
built. A merge key (``<<: *defaults``) may still be overridden by the mapping's own keys: that is
what it is for.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from mmspubench.errors import MMSpuBenchError

MAX_NODES = 100_000
"""Nodes of the file with every alias expanded; a sweep of hundreds of models has a few thousand."""
MAX_DEPTH = 100
"""Levels of nesting (a sweep file has five or six)."""
MERGE_TAG = "tag:yaml.org,2002:merge"


class _TooDeep(Exception):
    """Nesting deeper than :data:`MAX_DEPTH`."""


class _Repeated(Exception):
    """A key written twice in one mapping (raised by the loader, worded by :func:`load_yaml`)."""

    def __init__(self, key: Any, first: int, again: int) -> None:
        super().__init__(key)
        self.key, self.first, self.again = key, first, again


class _StrictLoader(yaml.SafeLoader):
    """``SafeLoader`` refusing a key given twice in the same mapping, and flow collections (``[``,
    ``{``) nested deeper than :data:`MAX_DEPTH` as its scanner meets them: PyYAML's scanner takes
    time quadratic in the open flow levels, seconds for a few thousand."""

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:  # PyYAML's parameter name
        if self.flow_level >= MAX_DEPTH:
            raise _TooDeep
        super().fetch_flow_collection_start(TokenClass)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: SafeConstructor words that error itself
                continue
            if first is not None:
                raise _Repeated(key, first, key_node.start_mark.line + 1)
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def _expanded_size(node: yaml.Node, memo: dict[int, int], depth: int = 0) -> int:
    """Nodes of ``node`` with every alias expanded (an alias is the same node object)."""
    if id(node) in memo:
        return memo[id(node)]
    memo[id(node)] = MAX_NODES + 1  # a node inside itself (a recursive alias) expands forever
    if depth > MAX_DEPTH:
        raise _TooDeep
    size = 1
    if isinstance(node, yaml.SequenceNode):
        size += sum(_expanded_size(item, memo, depth + 1) for item in node.value)
    elif isinstance(node, yaml.MappingNode):
        size += sum(
            _expanded_size(k, memo, depth + 1) + _expanded_size(v, memo, depth + 1) for k, v in node.value
        )
    memo[id(node)] = min(size, MAX_NODES + 1)
    return memo[id(node)]


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _check_texts(path: Path, obj: Any, where: str) -> None:
    """No text of the file holds a control character (a NUL in a path cannot reach the system)."""
    found = _CONTROL.search(obj) if isinstance(obj, str) else None
    if found is not None:
        raise MMSpuBenchError(
            f"{path}: {where or 'the document'}: a text holds the control character {found[0]!r}; "
            "expected printable text"
        )
    if isinstance(obj, dict):
        for key, value in obj.items():
            _check_texts(path, key, where)
            _check_texts(path, value, f"{where}.{key}" if where else str(key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            _check_texts(path, value, f"{where}[{i}]")


def _mark(err: yaml.MarkedYAMLError) -> str:
    mark = err.problem_mark or err.context_mark
    return "" if mark is None else f"line {mark.line + 1}, column {mark.column + 1}: "


def load_yaml(path: Path, text: str) -> Any:
    """The YAML document ``text`` of the file ``path`` (one line naming the file on any problem)."""
    text = text.removeprefix("\ufeff")  # a byte-order mark some editors write
    try:
        loader = _StrictLoader(text)
        try:
            node = loader.get_single_node()
            if node is not None and _expanded_size(node, {}) > MAX_NODES:
                raise MMSpuBenchError(
                    f"{path}: its aliases expand to more than {MAX_NODES} YAML nodes; "
                    "expected a sweep file, not an alias bomb"
                )
            obj = None if node is None else loader.construct_document(node)
        finally:
            loader.dispose()
        _check_texts(path, obj, "")
        return obj
    except _Repeated as err:
        raise MMSpuBenchError(
            f"{path}: line {err.again}: key {err.key!r} is given twice (first at line {err.first}); "
            "expected each key once"
        ) from None
    except (_TooDeep, RecursionError):
        raise MMSpuBenchError(
            f"{path}: nested deeper than {MAX_DEPTH} levels; expected a sweep file"
        ) from None
    except yaml.MarkedYAMLError as err:
        hint = "; indent with spaces, not tabs" if "\\t" in str(err.problem) else ""
        raise MMSpuBenchError(f"{path}: {_mark(err)}not valid YAML ({err.problem}{hint})") from None
    except yaml.YAMLError as err:
        raise MMSpuBenchError(f"{path}: not valid YAML ({type(err).__name__})") from None
