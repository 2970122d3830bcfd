"""``thinking:`` per model in SWEEP.yaml: each run's ``--thinking``, written bare (YAML's on/off)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mmspubench.cli import main
from mmspubench.eval.config import with_options
from mmspubench.sweep.argv import eval_argv, parsed_config
from mmspubench.sweep.spec import load_sweep

SECTIONS = ("slurm", "hf_jobs")


def _sweep(tmp_path: Path, models: str, options: str = "") -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(
        "root: runs\nvariants: [standard]\nmetrics: [accuracy]\n"
        f"options: {{limit: 2{options}}}\nmodels:\n{models}",
        encoding="utf-8",
    )
    return path


def test_each_model_runs_in_its_own_mode(tmp_path: Path) -> None:
    models = "  - {name: a, model: m1, thinking: off}\n  - {name: b, model: m2, thinking: on}\n  - {name: c, model: m3}\n"
    runs = load_sweep(_sweep(tmp_path, models), SECTIONS).runs
    assert [r.config.thinking for r in runs] == ["off", "on", "auto"]
    assert runs[0].argv[runs[0].argv.index("--thinking") + 1] == "off"
    assert "--thinking" not in runs[2].argv
    assert all(parsed_config(r.argv) == r.config for r in runs)


def test_a_mode_for_every_model_comes_from_the_options(tmp_path: Path) -> None:
    runs = load_sweep(_sweep(tmp_path, "  - {name: a, model: m1}\n", ", thinking: on"), SECTIONS).runs
    assert runs[0].config.thinking == "on"


@pytest.mark.parametrize(
    ("models", "expected"),
    [
        (
            "  - {name: a, model: m1, thinking: maybe}\n",
            "--thinking 'maybe': unknown; expected one of auto, on, off",
        ),
        (
            "  - {name: a, model: m1, thinking: on, options: {thinking: off}}\n",
            "models[0] (a): 'thinking' is given twice (also in its options)",
        ),
    ],
)
def test_a_bad_mode_is_one_line_naming_the_entry(
    models: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sweep", str(_sweep(tmp_path, models)), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err, err


def test_the_mode_round_trips_through_evals_parser() -> None:
    config = with_options(None, {"thinking": "off", "out": "x"})
    assert parsed_config(eval_argv(config)) == config
