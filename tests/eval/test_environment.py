"""Every run records what produced it; report and compare say where two runs' environments differ."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from mmspubench.eval import environment
from mmspubench.eval.analysis.report import markdown_table
from mmspubench.eval.bundled import bundled_model_dir
from mmspubench.eval.cli import main


def _eval(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["eval", "--limit", "2", "--no-progress", *argv])
    return code, err.getvalue().strip()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("env") / "run"
    code, err = _eval("--out", str(out))
    assert code == 0, err
    return out


def test_results_record_the_environment(run: Path) -> None:
    import PIL
    import torch
    import transformers

    results = json.loads((run / "results.json").read_text())
    env = results["environment"]
    assert env["packages"]["transformers"] == transformers.__version__
    assert env["packages"]["torch"] == torch.__version__
    assert env["packages"]["pillow"] == PIL.__version__
    assert set(environment.PACKAGES) == set(env["packages"])
    assert env["torch_cuda"] == torch.version.cuda
    assert env["device"]["device"] == "cpu" and env["device"]["cpu_count"] >= 1 and env["device"]["cpu"]
    assert env["attention"] == "sdpa"
    assert env["generation"]["do_sample"] is False and env["generation"]["num_beams"] == 1
    # The chat template's digest is of the exact text the run rendered with.
    template = json.loads((bundled_model_dir() / "processor_config.json").read_text()).get("chat_template")
    if template is None:
        template = (bundled_model_dir() / "chat_template.jinja").read_text()
    assert env["chat_template_sha256"] == hashlib.sha256(template.encode()).hexdigest()
    assert env["image_settings"]["size"] == {"height": 64, "width": 64}
    assert env["image_settings_sha256"] == environment.sha256_of(env["image_settings"])
    # Both digests are in the model's identity (run.json and results.json), the versions are not.
    manifest = json.loads((run / "run.json").read_text())["model"]
    for key in ("chat_template_sha256", "image_settings_sha256"):
        assert manifest[key] == results["model"][key] == env[key]
    assert "transformers" not in json.dumps(manifest)


@pytest.mark.process
def test_the_git_commit_of_a_clone(tmp_path: Path) -> None:
    """The source tree the package runs from: this clone, its commit and whether it is edited."""
    import subprocess

    root = Path(environment.__file__).resolve().parent.parent
    if not (root / ".git").exists():
        pytest.skip("the package does not run from a clone here")
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    environment._git.cache_clear()
    found = environment.describe(None, "cpu")["git"]
    assert found["commit"] == head.stdout.strip() and isinstance(found["dirty"], bool)
    (tmp_path / "clone").mkdir()
    assert environment._git(str(tmp_path / "clone")) is None  # not a clone: nothing recorded


def test_a_resume_with_another_chat_template_is_refused(tmp_path: Path) -> None:
    model = tmp_path / "model"
    shutil.copytree(bundled_model_dir(), model)
    run = tmp_path / "run"
    code, err = _eval("--model", str(model), "--out", str(run))
    assert code == 0, err
    # an unfinished run (a finished one is left as it is without loading the model)
    (run / "results.json").unlink()
    (run / "samples.jsonl").write_text((run / "samples.jsonl").read_text().splitlines(keepends=True)[0])
    config = model / "chat_template.jinja"
    if config.is_file():
        config.write_text(config.read_text().replace("assistant", "Assistant"))
    else:
        path = model / "processor_config.json"
        obj = json.loads(path.read_text())
        obj["chat_template"] = obj["chat_template"].replace("assistant", "Assistant")
        path.write_text(json.dumps(obj))
    code, err = _eval("--model", str(model), "--out", str(run))
    assert code == 2 and "holds a different run" in err and "model.chat_template_sha256" in err, err


def _results(transformers: str, commit: str, model: str = "m") -> dict[str, Any]:
    return {
        "benchmark": "MM-SpuBench",
        "model": {"id": model},
        "dataset": {"id": "d"},
        "config": {},
        "accuracy": None,
        "cgla": None,
        "environment": {
            "packages": {"transformers": transformers, "torch": "2.13.0"},
            "git": {"commit": commit, "dirty": False},
            "chat_template_sha256": model * 3,
        },
    }


def test_differences_by_hand() -> None:
    envs = [_results("5.24.0", "abc")["environment"], _results("5.25.0", "abc")["environment"], None]
    assert environment.differences(envs) == [("packages.transformers", ["5.24.0", "5.25.0", None])]
    assert environment.differences([envs[0], None]) == []  # one known run: nothing to compare
    other = _results("5.24.0", "abc", model="n")["environment"]
    assert environment.differences([envs[0], other]) == [("chat_template_sha256", ["mmm", "nnn"])]
    assert environment.differences([envs[0], other], same_model=False) == []


def test_report_footnotes_runs_that_differ(run: Path) -> None:
    same = markdown_table([_results("5.24.0", "abc"), _results("5.24.0", "abc")])
    assert "differ in what produced them" not in same
    table = markdown_table([_results("5.24.0", "abc"), _results("5.25.0", "def")])
    assert (
        "The runs differ in what produced them, in row order: git.commit (abc / def); "
        "packages.transformers (5.24.0 / 5.25.0)"
    ) in table
    # Two models: their chat templates differ by nature, and are not footnoted.
    assert "chat_template" not in markdown_table(
        [_results("5.24.0", "abc", "m"), _results("5.24.0", "abc", "n")]
    )


def test_compare_names_each_field_that_differs_before_its_figures(run: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(run, other)
    path = other / "results.json"
    results = json.loads(path.read_text())
    results["environment"]["packages"]["transformers"] = "9.9.9"
    path.write_text(json.dumps(results))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["compare", str(run), str(other)]) == 0
    lines = out.getvalue().splitlines()
    assert lines[2] == (
        "The runs differ in what produced them (A vs B): packages.transformers "
        f"{json.loads((run / 'results.json').read_text())['environment']['packages']['transformers']} vs 9.9.9"
    )
    assert lines.index("Accuracy (%)") > 2
    with contextlib.redirect_stdout(io.StringIO()) as same:
        assert main(["compare", str(run), str(run)]) == 0
    assert "differ in what produced them" not in same.getvalue()
