"""A ceiling run relabelled as a standard one is refused: its samples carry the ceiling run's stamp.

The real bundled model on the bundled release: the attribute-hint run scores 41.11, the standard
run 28.89. Editing ``config.prompt_variant`` and ``config.prompts`` of the ceiling run's
results.json makes it look like a standard run; submit and the Space's upload check both refuse it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from mmspubench.cli import main
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.prompts import prompt_spec
from mmspubench.space import handlers

from tests.helpers.shared_runs import bundled_run

from .test_submit import restamp

pytestmark = pytest.mark.slow  # two full runs of the bundled model

REVISION = "fedcba9876543210fedcba9876543210fedcba98"
DATASET = "mmbench/MM-SpuBench"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Path], dict[str, str]]]:
    """The bundled model's standard and attribute-hint runs, recorded as runs of the published dataset."""
    folders: dict[str, Path] = {}
    published: dict[str, str] = {}
    for variant in ("standard", "attribute-hint"):
        out = tmp_path_factory.mktemp(variant) / "run"
        # the standard variant is the default run (made once per session): copied, then edited
        options = {} if variant == "standard" else {"prompt_variant": variant}
        shared = bundled_run(tmp_path_factory, "default" if variant == "standard" else variant, **options)
        shutil.copytree(shared, out)
        results = json.loads((out / "results.json").read_text(encoding="utf-8"))
        dataset = results["dataset"]
        published = {
            "MMSPUBENCH_PUBLISHED_DATASET": str(dataset["path"]),
            "MMSPUBENCH_PUBLISHED_SPLIT": f"{dataset['split_n']}:{dataset['ids_sha256']}",
            "MMSPUBENCH_PUBLISHED_REVISION": REVISION,
        }
        dataset.update(kind="hub", id=DATASET, path=None, revision=REVISION, content_hash=None)
        (out / "results.json").write_text(json.dumps(results), encoding="utf-8")
        restamp(out / "results.json")  # a genuine run of the published dataset, as the runner stamps it
        folders[variant] = out
    yield folders, published


@pytest.fixture
def published_env(
    runs: tuple[dict[str, Path], dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> dict[str, Path]:
    folders, published = runs
    for name, value in published.items():
        monkeypatch.setenv(name, value)
    return folders


def _overall(run: Path) -> float:
    return round(json.loads((run / "results.json").read_text())["accuracy"]["overall"], 2)


def _submit(run: Path, out: Path) -> int:
    return main(["submit", str(run / "results.json"), "--model-repo", "org/model", "--dry-run", str(out)])


def test_the_ceiling_relabelled_standard_is_refused_by_submit_and_the_space(
    published_env: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    standard, ceiling = published_env["standard"], published_env["attribute-hint"]
    assert (_overall(standard), _overall(ceiling)) == (28.89, 41.11)
    assert _submit(standard, tmp_path / "standard") == 0, capsys.readouterr().err
    assert _submit(ceiling, tmp_path / "ceiling") == 2  # a ceiling is refused by name
    assert "is a ceiling" in capsys.readouterr().err
    forged = Path(shutil.copytree(ceiling, tmp_path / "forged"))
    results = json.loads((forged / "results.json").read_text())
    results["config"].update(prompt_variant="standard", prompts=prompt_spec("standard"))
    (forged / "results.json").write_text(json.dumps(results))
    out = tmp_path / "out"
    assert _submit(forged, out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "samples.jsonl: record '000000': field 'run'" in err, err
    assert "not the run" in err and not out.exists()
    with pytest.raises(MMSpuBenchError, match=r"^samples.jsonl: record '000000': field 'run'"):
        handlers.validate_upload(str(forged / "results.json"), str(forged / "samples.jsonl"), "org/model")


def test_stripped_or_mixed_stamps_are_refused(published_env: dict[str, Path], tmp_path: Path) -> None:
    standard, ceiling = published_env["standard"], published_env["attribute-hint"]
    for name, edit in (("stripped", lambda r, i: r.pop("run")), ("mixed", None)):
        run = Path(shutil.copytree(standard, tmp_path / name))
        lines = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
        other = json.loads((ceiling / "samples.jsonl").read_text().splitlines()[5])["run"]
        for i, record in enumerate(lines):
            if i == 5:
                if edit is None:
                    record["run"] = other
                else:
                    edit(record, i)
        (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
        with pytest.raises(MMSpuBenchError, match=r"record '000005': field 'run'"):
            handlers.validate_upload(str(run / "results.json"), str(run / "samples.jsonl"), "org/model")
