"""Issue 9, submit and Space side: forged runs are refused, uploads are checked on their bytes."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import gradio as gr
import numpy as np
import pytest
from mmspubench.cli import main
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.config import RunConfig
from mmspubench.eval.records import SampleResult
from mmspubench.eval.results import build_results, write_json_atomic
from mmspubench.eval.submit import checks
from mmspubench.eval.submit.submission import validate_submission
from mmspubench.space import handlers, live
from mmspubench.space.layout import build_app
from PIL import Image

from tests.dataset_builder.raw_fixtures import make_release, write_png_header_only
from tests.dataset_builder.test_safety_build import write_mpo
from tests.eval.submit.test_submit import REVISION, make_run, set_published_split

from .test_handlers import state  # noqa: F401  (fixture)
from .test_live import _png


@pytest.fixture(autouse=True)
def _published(monkeypatch: pytest.MonkeyPatch) -> None:
    set_published_split(monkeypatch)


def _samples(results_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (results_path.parent / "samples.jsonl").read_text().splitlines()]


def _forge(results_path: Path, lines: list[dict[str, Any]]) -> None:
    """Write edited samples and a results.json recomputed from them, as a forger would."""
    (results_path.parent / "samples.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    old = json.loads(results_path.read_text())
    config = RunConfig.from_json(old["config"])
    samples = [SampleResult.from_json(line) for line in lines]
    new = build_results(
        config,
        old["model"],
        {"id": old["dataset"]["id"], "revision": REVISION},
        samples,
        [s.id for s in samples],
        {},
    )
    write_json_atomic(results_path, new)


# 3. submit checks internal consistency -----------------------------------------------------


def test_correct_flag_forged_and_results_recomputed_is_refused(tmp_path: Path) -> None:
    results_path = make_run(tmp_path / "run")
    lines = _samples(results_path)
    wrong = next(line for line in lines if line["prediction"] != line["answer"])
    wrong["correct"] = True
    _forge(results_path, lines)
    with pytest.raises(MMSpuBenchError, match=rf"record '{wrong['id']}': field 'correct'"):
        validate_submission(results_path, "org/model", revision=REVISION)


def test_a_subset_of_samples_with_n_rewritten_is_refused(tmp_path: Path) -> None:
    results_path = make_run(tmp_path / "run")
    lines = [line for line in _samples(results_path) if line["correct"]]  # keep the good ones only
    _forge(results_path, lines)
    assert json.loads(results_path.read_text())["dataset"]["n"] == len(lines) < 20
    with pytest.raises(MMSpuBenchError, match="not the published split's 20 ids"):
        validate_submission(results_path, "org/model", revision=REVISION)


def test_other_ids_of_the_right_count_are_refused(tmp_path: Path) -> None:
    results_path = make_run(tmp_path / "run")
    lines = _samples(results_path)
    lines[0]["id"] = "999999"
    _forge(results_path, lines)
    with pytest.raises(MMSpuBenchError, match="not the published split's 20 ids"):
        validate_submission(results_path, "org/model", revision=REVISION)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s.update(types=["nonsense"]), "field 'types': unknown type 'nonsense'"),
        (lambda s: s.update(types="background"), "field 'types'"),
        (lambda s: s.update(answer="E"), "field 'answer'"),
        (lambda s: s.update(conditions=[]), "field 'conditions': 0 core conditions"),
        (lambda s: s.update(conditions=[c for c in s["conditions"] if c["kind"] == "core"]), "0 spurious"),
        (lambda s: s["conditions"][0].update(kind="other"), "not a sample record"),
        (lambda s: s.update(prediction="Z", correct=False), "field 'prediction'"),
    ],
)
def test_samples_off_the_schema_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Any, message: str
) -> None:
    results_path = make_run(tmp_path / "run")
    lines = _samples(results_path)
    edit(lines[2])
    (results_path.parent / "samples.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(MMSpuBenchError, match=message):
        validate_submission(results_path, "org/model", revision=REVISION)
    argv = ["submit", str(results_path), "--model-repo", "org/model", "--dataset-revision", REVISION]
    status = main([*argv, "--dry-run", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert ("record '000002'" in err or "line 3" in err) and not (tmp_path / "o").exists()


def test_the_space_submit_tab_runs_the_same_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MMSPUBENCH_PUBLISHED_REVISION", REVISION)
    results_path = make_run(tmp_path / "run")
    lines = [line for line in _samples(results_path) if line["correct"]]
    _forge(results_path, lines)
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    shutil.copy(results_path, uploads / "r.json")
    shutil.copy(results_path.parent / "samples.jsonl", uploads / "s.jsonl")
    with pytest.raises(MMSpuBenchError, match="not the published split's 20 ids"):
        handlers.validate_upload(str(uploads / "r.json"), str(uploads / "s.jsonl"), "org/model")


def test_a_recorded_digest_that_is_not_the_published_one_is_refused(tmp_path: Path) -> None:
    results_path = make_run(tmp_path / "run")
    data = json.loads(results_path.read_text())
    data["dataset"]["ids_sha256"] = "0" * 64
    results_path.write_text(json.dumps(data))
    with pytest.raises(MMSpuBenchError, match=r"field 'dataset\.ids_sha256'"):
        validate_submission(results_path, "org/model", revision=REVISION)


def test_the_published_split_is_read_from_the_built_card(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = make_release(tmp_path / "raw", n=5)
    assert main(["build", "--source", str(raw), "--out", str(tmp_path / "repo")]) == 0
    monkeypatch.delenv(checks.SPLIT_ENV)
    asked: list[tuple[str, str, str]] = []

    def download(repo_id: str, filename: str, repo_type: str, revision: str) -> str:
        asked.append((repo_id, filename, revision))
        return str(tmp_path / "repo" / filename)

    monkeypatch.setattr("huggingface_hub.hf_hub_download", download)
    ids = [f"{i:06d}" for i in range(5)]
    expected = hashlib.sha256("\n".join(ids).encode()).hexdigest()
    assert checks.published_split("org/ds", REVISION) == (5, expected)
    assert asked == [("org/ds", "README.md", REVISION)]


# 7. submit --dry-run at a file ----------------------------------------------------------------


def test_submit_dry_run_at_a_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results_path = make_run(tmp_path / "run")
    (tmp_path / "file").write_text("x")
    status = main(
        [
            "submit",
            str(results_path),
            "--model-repo",
            "org/model",
            "--dataset-revision",
            REVISION,
            "--dry-run",
            str(tmp_path / "file"),
        ]
    )
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "--dry-run is a file" in err, err
    assert (tmp_path / "file").read_text() == "x"


# 9. uploads are checked on their bytes ----------------------------------------------------------


def _upload_cases(tmp_path: Path) -> dict[str, Path]:
    gif = tmp_path / "gif.png"
    Image.new("RGB", (8, 8), "red").save(gif, format="GIF")
    text = tmp_path / "notes.png"
    text.write_text("just some text, not a picture\n")
    svg = tmp_path / "drawing.png"
    svg.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>')
    bomb = tmp_path / "huge.png"
    write_png_header_only(bomb, 20_000, 20_000)
    return {"GIF": gif, "not an image": text, "SVG": svg, "20000x20000|too many pixels": bomb}


def test_uploads_are_sniffed_before_decoding(tmp_path: Path) -> None:
    for message, path in _upload_cases(tmp_path).items():
        with pytest.raises(MMSpuBenchError, match=message) as info:
            live.load_upload(path)
        assert "\n" not in str(info.value) and path.name in str(info.value)


def test_the_run_tab_takes_the_upload_as_a_file_and_refuses_in_one_line(state, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    demo = build_app(state=state)
    upload = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "upload")
    assert isinstance(upload, gr.File) and upload.type == "filepath"  # gradio does not decode it
    texts = ["q", "a", "b", "c", "d", "A", "cls", "x", "y"]
    for message, path in _upload_cases(tmp_path).items():
        with pytest.raises(MMSpuBenchError, match=message):
            handlers.run_model(state, live.BUNDLED_CHOICE, handlers.UPLOADED_IMAGE, None, str(path), *texts)


# 10. a multi-picture JPEG upload is a JPEG --------------------------------------------------------


def test_a_multi_picture_jpeg_upload_is_accepted_first_frame(tmp_path: Path) -> None:
    path = tmp_path / "phone.jpg"
    write_mpo(path)
    image = live.load_upload(path)
    with Image.open(path) as mpo:
        assert np.array_equal(np.asarray(image), np.asarray(mpo.convert("RGB")))


# 10. model runs have their own bounded queue ----------------------------------------------------


def test_a_model_run_beyond_the_bound_is_refused_at_once_as_busy(tmp_path: Path) -> None:
    import threading

    from .fake_model import TableModel

    entered, release = threading.Event(), threading.Event()
    model = TableModel({"A": -1.0, "B": -2.0, "C": -3.0, "D": -4.0}, {})

    def slow_loader(source: object) -> TableModel:
        entered.set()
        release.wait(timeout=60)
        return model

    cache = live.ModelCache([], loader=slow_loader, max_pending=1)
    item = live.custom_item(live.load_upload(_png(tmp_path)), "q", ["a", "b", "c", "d"], "A", "cls", "x", "y")
    results: list[Any] = []
    first = threading.Thread(target=lambda: results.append(cache.run(live.BUNDLED_CHOICE, item)))
    first.start()
    assert entered.wait(timeout=60)
    with pytest.raises(MMSpuBenchError, match=r"busy.*retry"):
        cache.run(live.BUNDLED_CHOICE, item)
    release.set()
    first.join(timeout=60)
    assert len(results) == 1 and results[0].sample.prediction == "A"
    assert cache.run(live.BUNDLED_CHOICE, item).sample.prediction == "A"  # the slot was given back
