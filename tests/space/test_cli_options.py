"""``space`` and ``submit`` options are generated from their dataclasses (flag, default, help, choices)."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import pytest
from mmspubench.cli import build_parser
from mmspubench.eval.submit.submission import PUBLISHED_DATASET_ID, SubmitOptions
from mmspubench.options import flag, help_with_default
from mmspubench.space.cli import ServeOptions


def _command(name: str) -> argparse.ArgumentParser:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    found: Any = action.choices[name]
    return found


@pytest.mark.parametrize(("name", "cls"), [("space", ServeOptions), ("submit", SubmitOptions)])
def test_each_field_is_its_flag_with_its_default_and_help(name: str, cls: type) -> None:
    actions = {a.dest: a for a in _command(name)._actions}
    for f in dataclasses.fields(cls):
        action = actions[f.name]
        assert action.help == help_with_default(f) and f.metadata["help"] in str(action.help)
        if f.metadata["positional"]:
            assert action.option_strings == [] and action.metavar == "RESULTS_JSON"
        else:
            assert flag(f.name) in action.option_strings
            assert action.required is (f.default is dataclasses.MISSING)
            if f.default is not dataclasses.MISSING:
                assert action.default == f.default


def test_submit_parses_as_before() -> None:
    args = build_parser().parse_args(["submit", "r.json", "--model-repo", "org/m", "--dry-run", "out"])
    assert (args.results_json, args.model_repo, args.dry_run) == ("r.json", "org/m", "out")
    assert (args.dataset_id, args.dataset_revision, args.token) == (PUBLISHED_DATASET_ID, None, None)
    space = build_parser().parse_args(["space", "--unknown-keys", "ignore", "--port", "1"])
    assert (space.host, space.port, space.unknown_keys, space.dataset) == ("127.0.0.1", 1, "ignore", None)
