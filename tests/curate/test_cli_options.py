"""``curate``'s options are generated from its config dataclasses, as ``eval``'s are from RunConfig:
one declaration per option (flag, default, help, choices), so a default cannot drift."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import pytest
from mmspubench.cli import build_parser
from mmspubench.curate.annotate import AnnotateConfig
from mmspubench.curate.backends import BACKENDS
from mmspubench.curate.cli import ReviewOptions, _config
from mmspubench.curate.export import ExportConfig
from mmspubench.curate.select import SelectConfig
from mmspubench.options import flag, help_with_default

STEPS: list[tuple[str, type, list[str]]] = [
    ("select", SelectConfig, ["--data", "d", "--source-name", "ObjectNet"]),
    ("annotate", AnnotateConfig, ["--candidates", "c", "--backend", "openai", "--model", "m"]),
    ("export", ExportConfig, ["--draft", "d", "--db", "x.sqlite"]),
    ("review", ReviewOptions, ["--draft", "d", "--db", "x.sqlite"]),
]


def _step_parser(step: str) -> argparse.ArgumentParser:
    def sub(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        found: Any = action.choices[name]
        return found

    return sub(sub(build_parser(), "curate"), step)


@pytest.mark.parametrize(("step", "cls", "required"), STEPS)
def test_each_field_is_its_flag_with_its_default_and_help(step: str, cls: type, required: list[str]) -> None:
    parser = _step_parser(step)
    flags = {a.dest: a for a in parser._actions}
    for f in dataclasses.fields(cls):
        action = flags[f.name]
        assert flag(f.name) in action.option_strings
        assert action.help == help_with_default(f) and f.metadata["help"] in str(action.help)
        has_default = f.default is not dataclasses.MISSING
        assert action.required is not has_default
        if has_default:
            assert action.default == f.default
    parsed = parser.parse_args([*required, "--out", "o"] if step != "review" else required)
    given = {
        f.name: getattr(parsed, f.name) for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING
    }
    assert _config(cls, parsed) == cls(**given)


def test_the_annotate_backend_choices_are_the_annotators() -> None:
    action = next(a for a in _step_parser("annotate")._actions if a.dest == "backend")
    assert tuple(action.choices or ()) == BACKENDS
