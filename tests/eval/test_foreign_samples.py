"""A samples.jsonl that another run wrote, beside a run's results.json: ``compare`` and ``report
--plot`` refuse it by the run stamp (as a resume does), in one line naming the file, the record and
the field, exit 2, nothing written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from mmspubench.cli import main
from mmspubench.eval.config import RunConfig
from mmspubench.eval.submit.checks import expected_stamp

from tests.eval.compare_fakes import Item, write_run

TYPES = (("background",), ("shape",), ("background", "shape"), ("colorization",))


def _items(pattern: str) -> list[Item]:
    return [
        Item(f"{i:03d}", TYPES[i % len(TYPES)], ch == "1", cgla_min=(i % 3) - 1.0)
        for i, ch in enumerate(pattern)
    ]


def stamp(folder: Path) -> Path:
    """Stamp every sample of ``folder`` as eval does: with the run its results.json describes."""
    results = json.loads((folder / "results.json").read_text())
    value = expected_stamp(results, RunConfig.from_json(results["config"]))
    lines = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    (folder / "samples.jsonl").write_text(
        "".join(json.dumps({**line, "run": value}) + "\n" for line in lines)
    )
    return folder


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A biased run, a balanced run (another model, other answers) and a folder holding the biased
    run's results.json with the balanced run's samples.jsonl."""
    biased = stamp(write_run(tmp_path / "biased", _items("1000100010"), model="tiny-llava-biased"))
    balanced = stamp(write_run(tmp_path / "balanced", _items("1111011110"), model="tiny-llava-balanced"))
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(biased / "results.json", mixed / "results.json")
    shutil.copy(balanced / "samples.jsonl", mixed / "samples.jsonl")
    return biased, balanced, mixed


def _refusal(err: str, mixed: Path) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert (
        str(mixed / "samples.jsonl") in lines[0] and "record '000'" in lines[0] and "field 'run'" in lines[0]
    )
    assert str(mixed / "results.json") in lines[0] and "Traceback" not in err


def test_compare_refuses_another_runs_samples(
    runs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    biased, balanced, mixed = runs
    assert main(["compare", str(biased), str(balanced)]) == 0  # each run alone compares
    capsys.readouterr()
    out, plot = tmp_path / "cmp.json", tmp_path / "cmp.png"
    for a, b in ((mixed, balanced), (balanced, mixed / "results.json")):
        assert main(["compare", str(a), str(b), "--json", str(out), "--plot", str(plot)]) == 2
        captured = capsys.readouterr()
        _refusal(captured.err, mixed)
        assert captured.out == "" and not out.exists() and not plot.exists()


def test_report_plot_refuses_another_runs_samples(
    runs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    biased, _, mixed = runs
    plot = tmp_path / "per-type.png"
    assert main(["report", str(biased), str(mixed), "--plot", str(plot)]) == 2
    captured = capsys.readouterr()
    _refusal(captured.err, mixed)
    assert captured.out == "" and not plot.exists()


def test_a_line_without_a_stamp_among_stamped_ones_is_refused(
    runs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    biased, balanced, _ = runs
    lines = (biased / "samples.jsonl").read_text().splitlines()
    first = {k: v for k, v in json.loads(lines[3]).items() if k != "run"}
    (biased / "samples.jsonl").write_text("\n".join([*lines[:3], json.dumps(first), *lines[4:]]) + "\n")
    assert main(["compare", str(biased), str(balanced)]) == 2
    err = capsys.readouterr().err
    assert "line 4: record '003': field 'run': carries no run stamp" in err and err.count("\n") == 1


def test_samples_written_before_stamps_are_read_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No line carries a stamp (a run older than stamps): nothing to tell it by, read as it was."""
    old = write_run(tmp_path / "old", _items("1000100010"), model="tiny-llava-biased")
    new = stamp(write_run(tmp_path / "new", _items("1111011110"), model="tiny-llava-balanced"))
    assert main(["compare", str(old), str(new)]) == 0
    assert "| Overall | 10 | 30.00 | 80.00 |" in capsys.readouterr().out
