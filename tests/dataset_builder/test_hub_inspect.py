"""The built repo's eval.yaml as inspect-ai 0.3.285's own Hub loader reads, runs and scores it, offline."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from mmspubench.cli import main
from mmspubench.dataset_builder.eval_yaml_check import check_eval_yaml
from mmspubench.errors import MMSpuBenchError

from tests.dataset_builder import hub_fixtures as hub

pytest.importorskip("inspect_ai", reason="pip install 'mm-spubench[inspect]'")

REPO_ID = "mmbench/MM-SpuBench-built"
COMMIT = "fe" * 20
RIGHT = {0, 3, 4, 9}
"""Records the mock model answers correctly; it answers every other one wrongly."""


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "inspect-cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    release = hub.write_release(tmp_path / "published")
    assert main(["build", "--source", str(release), "--out", str(tmp_path / "repo")]) == 0
    return tmp_path / "repo"


def _serve_offline(monkeypatch: pytest.MonkeyPatch, snapshot: Path) -> None:
    """datasets reads a Hub repo only through the Hub API, which offline mode turns off: hand
    datasets the cached snapshot folder for the repo id, as the Hub would serve it (configs from its card)."""
    import datasets

    original = datasets.load_dataset

    def load_dataset(path: str, *args: Any, **kwargs: Any) -> Any:
        if path == REPO_ID:
            kwargs.pop("revision", None)
            path = str(snapshot)
        return original(path, *args, **kwargs)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)


def _mock_answers() -> Callable[..., Any]:
    from inspect_ai.model import ModelOutput, ModelUsage

    def answer(messages: list[Any], *_: Any) -> Any:
        text = messages[-1].text
        found = re.search(r"Question (\d+):", text)
        assert found is not None, text
        number = int(found.group(1))
        letter = "A" if number in RIGHT else "B"  # every answer is A (hub_fixtures.record)
        output = ModelOutput.from_content(model="mockllm/model", content=f"ANSWER: {letter}")
        output.usage = ModelUsage(input_tokens=10, output_tokens=2, total_tokens=12)  # no tokenizer download
        return output

    return answer


def test_inspect_ai_loads_runs_and_scores_every_task_of_the_built_eval_yaml(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from inspect_ai import eval as inspect_eval
    from inspect_ai._eval.task.hf import task_create_from_hf
    from inspect_ai.model import get_model

    snapshot = hub.put_in_hub_cache(built, REPO_ID, COMMIT)
    _serve_offline(monkeypatch, snapshot)
    spec = yaml.safe_load((built / "eval.yaml").read_text())
    assert spec["evaluation_framework"] == "inspect-ai"
    assert [t["id"] for t in spec["tasks"]] == ["mcq_accuracy", "blind_accuracy"]
    tasks = task_create_from_hf(f"hf/{REPO_ID}")
    assert len(tasks) == len(spec["tasks"])
    samples = list(tasks[0].dataset)
    assert len(samples) == hub.N_IMAGES
    image = cast(Any, samples[0].input)[0].content[1].image
    assert image.startswith("data:image/png;base64,")
    assert samples[0].choices == ["cat", "dog", "car", "cup"] and samples[0].target == "A"
    metadata = samples[0].metadata
    assert metadata is not None and metadata["class_name"] == "cat"
    model = get_model("mockllm/model", custom_outputs=_mock_answers())
    logs = inspect_eval(tasks, model=model, log_dir=str(tmp_path / "logs"), display="none")
    assert [log.status for log in logs] == ["success"] * len(spec["tasks"])
    for log in logs:  # the mock answers from the question's text alone, so blind scores the same
        accuracy = cast(Any, log).results.scores[0].metrics["accuracy"].value
        assert accuracy == pytest.approx(len(RIGHT) / hub.N_IMAGES, abs=1e-12)
    blind = list(tasks[1].dataset)
    assert len(blind) == hub.N_IMAGES and isinstance(blind[0].input, str)  # no image content at all
    assert blind[0].choices == samples[0].choices and blind[0].target == samples[0].target


def test_the_inspect_config_holds_the_default_configs_rows_with_the_exact_image_bytes(built: Path) -> None:
    import base64

    import datasets
    import pyarrow.parquet as pq
    from mmspubench.dataset_builder.load import load_benchmark

    rows = pq.read_table(next((built / "inspect").glob("*.parquet"))).to_pylist()
    default = load_benchmark(built)
    assert [r["id"] for r in rows] == default["id"]
    letters = default.features["answer"].names
    for row, item in zip(rows, default.cast_column("image", datasets.Image(decode=False)), strict=True):
        prefix, _, payload = row["image"].partition(",")
        assert prefix == "data:image/png;base64"
        assert base64.b64decode(payload) == item["image"]["bytes"]
        assert (row["question"], row["options"], row["answer"]) == (
            item["question"],
            item["options"],
            letters[item["answer"]],
        )


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s.update(evaluation_framework="mm-spubench"), "evaluation_framework"),
        (lambda s: s["tasks"][0].update(description="x"), "not allowed by inspect-ai"),
        (lambda s: s["tasks"][0].update(scorers=[{"name": "cgla"}]), "is not one of inspect-ai's"),
        (lambda s: s["tasks"][0]["field_spec"].update(input_image="nope"), "column"),
        (lambda s: s["tasks"][0].update(epochs=0), "inspect-ai rejects it"),
        (lambda s: s["tasks"].append(dict(s["tasks"][0], id=None)), "'id' is required"),
        (lambda s: s["tasks"][0].update(config="default"), "data:image/"),
    ],
)
def test_push_refuses_an_eval_yaml_inspect_ai_would_reject(
    built: Path, edit: Callable[[dict[str, Any]], Any], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    check_eval_yaml(built)
    spec = yaml.safe_load((built / "eval.yaml").read_text())
    edit(spec)
    (built / "eval.yaml").write_text(yaml.safe_dump(spec))
    with pytest.raises(MMSpuBenchError, match=re.escape(message)):
        check_eval_yaml(built)
    capsys.readouterr()
    assert main(["push", "--repo-dir", str(built), "--repo-id", REPO_ID, "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
