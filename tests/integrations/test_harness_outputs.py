"""The harness commands' outputs: ``integrations lmms-eval --out`` never writes into the dataset it
reads (a task folder inside a built folder changes its content hash, so runs of it no longer
resume), and ``export --interventions`` takes an empty value as ``eval --interventions`` does."""

from __future__ import annotations

from pathlib import Path

import pytest
from mmspubench.cli import main

from tests.docs_examples import DOCS


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("through", ["path", "link"])
def test_a_task_copy_inside_its_dataset_is_refused_and_the_dataset_is_unchanged(
    through: str, published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.dataset_builder.load import built_folder_for, content_hash

    built = built_folder_for(published / "published")
    before = (sorted(p.name for p in built.rglob("*")), content_hash(built))
    given = built
    if through == "link":  # the same folder under another name
        given = tmp_path / "built-link"
        given.symlink_to(built, target_is_directory=True)
    capsys.readouterr()  # the build's progress bars
    argv = ["integrations", "lmms-eval", "--dataset", str(given), "--out", str(given / "task")]
    assert main(argv) == 2
    line = _one_line(capsys.readouterr().err)
    assert f"--out {given / 'task'}: lies inside the input folder {given}" in line, line
    assert not (built / "task").exists()
    assert (sorted(p.name for p in built.rglob("*")), content_hash(built)) == before
    # beside it, the copy is written as before
    assert main(["integrations", "lmms-eval", "--dataset", str(given), "--out", str(tmp_path / "task")]) == 0
    assert (tmp_path / "task" / "mm_spubench.yaml").is_file()


def test_an_empty_interventions_value_is_refused_by_export_as_by_eval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "MM_SpuBench.tsv"
    argv = ["export", "--format", "vlmevalkit", "--interventions", "", "--out", str(out)]
    assert main(argv) == 2
    exported = _one_line(capsys.readouterr().err)
    assert (
        main(
            [
                "eval",
                "--metrics",
                "accuracy,interventions",
                "--interventions",
                "",
                "--out",
                str(tmp_path / "r"),
            ]
        )
        == 2
    )
    evaluated = _one_line(capsys.readouterr().err)
    reason = "--interventions: no name given; expected some of grayscale, blur, equalize, noise"
    assert exported.endswith(reason) and evaluated.endswith(reason), (exported, evaluated)
    assert list(tmp_path.iterdir()) == []
    # and the VLMEvalKit page says so (it once said an empty list meant the four built-ins)
    page = " ".join((DOCS / "harnesses" / "vlmevalkit.md").read_text(encoding="utf-8").split())
    assert "an empty list is the four built-ins" not in page
    assert "an empty value is refused, as by `mmspubench eval`" in page
