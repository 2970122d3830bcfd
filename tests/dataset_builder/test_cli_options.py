"""``build``'s options are generated from ``BuildOptions`` (flag, default, help, choices)."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from mmspubench.cli import build_parser
from mmspubench.dataset_builder.builder import BuildOptions
from mmspubench.options import flag, help_with_default


def test_each_build_option_is_its_flag_with_its_default_and_help() -> None:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    build: Any = action.choices["build"]
    actions = {a.dest: a for a in build._actions}
    for f in dataclasses.fields(BuildOptions):
        if not f.metadata["cli"]:
            assert f.name not in actions
            continue
        assert flag(f.name) in actions[f.name].option_strings
        assert actions[f.name].help == help_with_default(f) and actions[f.name].default == f.default
    assert tuple(actions["unknown_keys"].choices or ()) == ("error", "ignore")
    args = build_parser().parse_args(["build", "--source", "s", "--out", "o"])
    assert (
        BuildOptions(max_image_pixels=args.max_image_pixels, unknown_keys=args.unknown_keys) == BuildOptions()
    )


def test_each_synth_option_is_its_flag_and_the_cue_policies_exclude_each_other() -> None:
    from mmspubench.dataset_builder.synth.cli import SynthOptions

    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    synth: Any = action.choices["synth"]
    actions = {a.dest: a for a in synth._actions}
    for f in dataclasses.fields(SynthOptions):
        assert flag(f.name) in actions[f.name].option_strings
        assert actions[f.name].help == help_with_default(f)
        if f.default is not dataclasses.MISSING:
            assert actions[f.name].default == f.default
    assert actions["out"].required
    args = build_parser().parse_args(["synth", "--out", "o", "--correlated-types", "BG"])
    assert (
        args.correlated_types == ("background",) and args.n == SynthOptions.__dataclass_fields__["n"].default
    )
    group = next(g for g in synth._mutually_exclusive_groups)
    assert {a.dest for a in group._group_actions} == {"correlation", "cue"}
