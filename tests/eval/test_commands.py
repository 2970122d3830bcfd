from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from mmspubench.cli import main
from mmspubench.dataset_builder.schema import TYPE_ABBREV
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import results
from mmspubench.eval.commands import default_out, parse_metrics


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("accuracy,cgla", ("accuracy", "cgla")),
        ("cgla", ("cgla",)),
        ("cgla, accuracy", ("accuracy", "cgla")),
        ("accuracy,accuracy", ("accuracy",)),
    ],
)
def test_parse_metrics(text: str, expected: tuple[str, ...]) -> None:
    assert parse_metrics(text) == expected


@pytest.mark.parametrize("text", ["", "accuracy,f1", ","])
def test_parse_metrics_rejects(text: str) -> None:
    with pytest.raises(MMSpuBenchError, match="--metrics"):
        parse_metrics(text)


def test_default_out_names_model_and_time() -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    assert default_out("org/Model-7B", now) == Path("runs/org__Model-7B-20260102-030405")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--limit", "0"], "--limit must be a positive"),
        (["--limit", "-3"], "--limit must be a positive"),
        (["--metrics", "speed"], "--metrics"),
        (["--dataset", "/no/such/folder"], "/no/such/folder"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    out = tmp_path / "run"
    assert main(["eval", "--out", str(out), "--no-progress", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and err[0].startswith("mmspubench eval: error:")
    assert not out.exists()


def test_default_eval_end_to_end_with_bundled_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.dataset_builder.defaults import default_dataset_dir
    from mmspubench.eval.bundled import bundled_model_dir

    out = tmp_path / "run"
    assert main(["eval", "--limit", "5", "--out", str(out), "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "biased on purpose" in captured.out and "--model" in captured.out
    # The note is printed once, after the figures it qualifies.
    assert (captured.out + captured.err).count("biased on purpose") == 1
    res = json.loads((out / "results.json").read_text())
    assert res["model"]["path"] == str(bundled_model_dir())
    assert res["dataset"]["path"] == str(default_dataset_dir())
    assert res["dataset"]["n"] == 5 and res["accuracy"]["n"] == 5 and res["cgla"]["n"] == 5
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 5 and all(len(s["conditions"]) >= 2 for s in samples)
    # Per-type accuracy and CGLA_acc recounted from samples.jsonl by hand.
    for abbrev in TYPE_ABBREV.values():
        rows = [s for s in samples if abbrev in {TYPE_ABBREV[t] for t in s["types"]}]
        acc = 100.0 * (sum(s["correct"] for s in rows) / len(rows)) if rows else None
        cgla = 100.0 * (sum(s["cgla_acc"] for s in rows) / len(rows)) if rows else None
        assert res["accuracy"]["by_type"][abbrev] == acc and res["cgla"]["by_type"][abbrev] == cgla
    # Rerunning a finished run leaves its results.json as it was (timing, created_at) and says so;
    # a different config is refused.
    before = (out / "results.json").read_bytes()
    assert main(["eval", "--limit", "5", "--out", str(out), "--no-progress"]) == 0
    assert (out / "results.json").read_bytes() == before
    assert "already finished" in capsys.readouterr().err
    assert main(["eval", "--limit", "5", "--out", str(out), "--core-reduction", "mean", "--no-progress"]) == 2
    assert "different run" in capsys.readouterr().err
    record = results.read_run(out)
    assert results.recompute(record.samples, record.config)["cgla"] == res["cgla"]
