"""What `mmspubench sweep` refuses before it runs anything: the command's numbers, the YAML itself
(repeated keys, syntax errors with their place, alias bombs), the ``hf_jobs:`` values, and output
roots inside what the runs read. Each is one line, exit 2, nothing written."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from mmspubench.cli import main
from mmspubench.eval.bundled import BIASED_MODEL
from mmspubench.redact import forget_secrets
from mmspubench.sweep.launchers import hf_jobs
from mmspubench.sweep.launchers.plugin import settings_of
from mmspubench.sweep.launchers.registry import get_launcher

from tests.sweep.hub_standin import StandInJobs
from tests.sweep.sweep_files import TWO_MODELS, write_sweep

TOKEN = "hf_standinSecretValue0123456789abcdef"
HF = {"results_repo": "org/sweep-results", "flavor": "cpu-basic", "timeout": "10m"}
ONE = f"root: runs\nmodels:\n  - {{name: biased, model: {BIASED_MODEL}}}\n"


def _one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    out = capsys.readouterr()
    err = out.err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and not out.out, out
    return err


def _file(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInJobs]:
    api = StandInJobs(tmp_path / "standin")
    monkeypatch.setattr(hf_jobs, "make_api", api.client)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    yield api
    forget_secrets()


# --- the command's numbers ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--retries", "-1"], "--retries must be an integer from 0 to 100, got -1"),
        (["--max-parallel", "0"], "--max-parallel must be an integer from 1 to 1024, got 0"),
        (["--max-parallel", "-3"], "--max-parallel must be an integer from 1 to 1024, got -3"),
        (["--max-parallel", "1000000000000"], "--max-parallel must be an integer from 1 to 1024"),
    ],
)
def test_out_of_range_numbers_of_the_command_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], expected: str
) -> None:
    for dry in ([], ["--dry-run"]):
        err = _one_line(capsys, ["sweep", str(_file(tmp_path, ONE)), *flags, *dry])
        assert expected in err, err
    assert not (tmp_path / "runs").exists()


# --- the YAML itself ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            f"root: runs\nmodels: []\nmodels:\n  - {{model: {BIASED_MODEL}}}\n",
            "line 3: key 'models' is given twice (first at line 2)",
        ),
        (
            f"root: a\nroot: b\nmodels: [{{model: {BIASED_MODEL}}}]\n",
            "line 2: key 'root' is given twice (first at line 1)",
        ),
        (
            f"root: runs\nmodels:\n  - name: x\n    model: {BIASED_MODEL}\n    name: y\n",
            "line 5: key 'name' is given twice (first at line 3)",
        ),
        (
            f"root: runs\noptions:\n  limit: 2\n  progress: false\n  limit: 3\nmodels: [{{model: {BIASED_MODEL}}}]\n",
            "line 5: key 'limit' is given twice (first at line 3)",
        ),
        (
            f"root: runs\nmodels: [{{model: {BIASED_MODEL}}}]\nhf_jobs:\n  results_repo: a/b\n  results_repo: c/d\n",
            "line 5: key 'results_repo' is given twice (first at line 4)",
        ),
    ],
)
def test_a_key_given_twice_at_any_level_is_refused_with_both_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    err = _one_line(capsys, ["sweep", str(_file(tmp_path, text)), "--dry-run"])
    assert err.startswith(f"mmspubench sweep: error: {tmp_path / 'sweep.yaml'}: ") and expected in err, err


def test_a_merge_key_may_still_be_overridden(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``<<: *defaults`` then a key of its own is YAML's way to override a default, not a repeat."""
    text = (
        "root: runs\nmodels:\n"
        f"  - {{name: a, model: {BIASED_MODEL}, options: &o {{limit: 2, progress: false}}}}\n"
        f"  - {{name: b, model: {BIASED_MODEL}, options: {{<<: *o, limit: 3}}}}\n"
    )
    assert main(["sweep", str(_file(tmp_path, text)), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "--limit 2 --no-progress" in out and "--limit 3 --no-progress" in out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("root: runs\nmodels: [\n", "line 3, column 1: not valid YAML (expected the node content"),
        ("root: runs\nmodels:\n\t- {model: m}\n", "line 3, column 1: not valid YAML (found character '\\t'"),
        ("root: runs\nmodels: {a: 1\n", "line 3, column 1: not valid YAML"),
        ("root: 'open\n", "line 2, column 1: not valid YAML (found unexpected end of stream"),
    ],
)
def test_a_yaml_syntax_error_names_the_file_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    err = _one_line(capsys, ["sweep", str(_file(tmp_path, text)), "--dry-run"])
    assert f"{tmp_path / 'sweep.yaml'}: {expected}" in err, err


def test_tabs_get_a_hint_a_byte_order_mark_is_read_and_other_bytes_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _one_line(
        capsys, ["sweep", str(_file(tmp_path, "root: r\nmodels:\n\t- {model: m}\n")), "--dry-run"]
    )
    assert "indent with spaces, not tabs" in err
    assert main(["sweep", str(_file(tmp_path, b"\xef\xbb\xbf" + ONE.encode())), "--dry-run"]) == 0
    assert "biased--standard" in capsys.readouterr().out
    err = _one_line(capsys, ["sweep", str(_file(tmp_path, b"root: runs\xe9\n")), "--dry-run"])
    assert "sweep.yaml: byte 10: not UTF-8 text" in err


LAUGHS = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10)
)
"""Ten levels of ten aliases: 10**10 strings once expanded, from a file of 700 bytes."""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (LAUGHS, "its aliases expand to more than 100000 YAML nodes"),
        ("root: &r [*r]\n", "its aliases expand to more than 100000 YAML nodes"),
        ("root: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than 100 levels"),
    ],
)
@pytest.mark.timeout(120)  # an expansion of 10**10 nodes would never end: the test fails there
def test_alias_bombs_and_deep_nesting_are_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    err = _one_line(capsys, ["sweep", str(_file(tmp_path, text)), "--dry-run"])
    assert expected in err, err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- a\n- b\n", "expected a mapping with keys root"),
        ("just text\n", "expected a mapping with keys root"),
        ("", "expected a mapping with keys root"),
        (
            "root: runs\nmodels:\n  - {model: 12}\n",
            "models[0]: field 'model': expected a Hub id or a folder",
        ),
        (
            "root: runs\nmodels:\n  - {model: [a, b]}\n",
            "models[0]: field 'model': expected a Hub id or a folder",
        ),
        (
            "root: runs\nmodels:\n  - {model: '  '}\n",
            "models[0]: field 'model': expected a Hub id or a folder",
        ),
        (
            f"root: runs\nmodels:\n  - {{model: {BIASED_MODEL}, name: 12}}\n",
            "models[0]: field 'name': expected a text",
        ),
        (
            f"root: runs\nmodels:\n  - {{model: {BIASED_MODEL}, name: ''}}\n",
            "models[0]: field 'name': expected a text",
        ),
        ("root: runs\nmodels: {model: m}\n", "models: expected a non-empty list"),
        ("root: runs\nmodels:\n  - just-a-string\n", "models[0]: expected a mapping"),
        (f"root: runs\nmodels: [{{model: {BIASED_MODEL}}}]\nhf_jobs: [a]\n", "hf_jobs: expected a mapping"),
        (
            f"root: runs\nmodels: [{{model: {BIASED_MODEL}}}]\n{{a: 1}}: 2\n",
            "line 3, column 1: not valid YAML (found unhashable key)",
        ),
    ],
)
def test_files_of_the_wrong_shape_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    err = _one_line(capsys, ["sweep", str(_file(tmp_path, text)), "--dry-run"])
    assert "sweep.yaml" in err and expected in err, err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'root: "a\\0b"\nmodels: [{model: m}]\n',
            "sweep.yaml: root: a text holds the control character '\\x00'",
        ),
        (
            'root: r\nmodels: [{model: "m\\0"}]\n',
            "sweep.yaml: models[0].model: a text holds the control character",
        ),
        (
            'root: r\nmodels: [{model: m, name: "a\\x1b[2Jb"}]\n',
            "models[0].name: a text holds the control character '\\x1b'",
        ),
    ],
)
def test_a_control_character_in_any_text_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    """A NUL in the root was an internal error; in a model id it reached the eval process."""
    err = _one_line(capsys, ["sweep", str(_file(tmp_path, text)), "--dry-run"])
    assert expected in err, err


def test_a_folder_given_as_the_sweep_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _one_line(capsys, ["sweep", str(tmp_path), "--dry-run"])
    assert f"{tmp_path}: is a directory; expected a SWEEP.yaml file" in err


# --- outputs inside inputs --------------------------------------------------------------------


def test_the_root_may_not_lie_inside_a_model_or_dataset_folder_or_be_the_sweep_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "models" / "m"
    shutil.copytree(BIASED_MODEL, model)
    (tmp_path / "data").mkdir()
    cases = [
        (
            {"root": "models/m/runs", "models": [{"model": "models/m"}]},
            "root",
            "lies inside the input folder",
        ),
        ({"root": "models/m", "models": [{"model": "models/m"}]}, "root", "is the input"),
        ({"root": "sweep.yaml", "models": [{"model": "models/m"}]}, "root", "is the input"),
        (
            {"root": "data/runs", "dataset": "data", "models": [{"model": "models/m"}]},
            "root",
            "inside the input folder",
        ),
    ]
    for doc, field, reason in cases:
        err = _one_line(capsys, ["sweep", str(write_sweep(tmp_path, **doc)), "--dry-run"])
        assert f"sweep.yaml: {field} " in err and reason in err, err
    # a run folder that is the model's own folder (replaced whole when a job's run is fetched)
    model_as_run = tmp_path / "models" / "m--standard"
    shutil.copytree(BIASED_MODEL, model_as_run)
    doc = {
        "root": "models",
        "models": [{"model": "models/m--standard", "name": "m"}],
        "variants": ["standard"],
    }
    err = _one_line(capsys, ["sweep", str(write_sweep(tmp_path, **doc)), "--dry-run"])
    assert "sweep.yaml: run folder " in err and "is the input" in err, err


def test_an_error_line_keeps_a_folder_named_hf_something(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "hf-jobs-output" / "hf_runs_of_the_week"
    folder.mkdir(parents=True)
    path = write_sweep(folder, models=[{**TWO_MODELS[0], "options": {"batch_size": 0}}])
    err = _one_line(capsys, ["sweep", str(path), "--dry-run"])
    assert f"{folder}/sweep.yaml: models[0] (biased)" in err and "***" not in err, err


# --- hf_jobs: values ---------------------------------------------------------------------------


def _hf(tmp_path: Path, **hf: object) -> Path:
    return write_sweep(
        tmp_path, variants=["standard"], metrics=["accuracy"], models=TWO_MODELS[:1], hf_jobs={**HF, **hf}
    )


@pytest.mark.parametrize(
    ("hf", "expected"),
    [
        ({"results_repo": "org/name/extra"}, "hf_jobs: results_repo 'org/name/extra': not a Hub repo id"),
        ({"results_repo": "org--x/y"}, "hf_jobs: results_repo 'org--x/y': not a Hub repo id"),
        ({"results_repo": "my org/runs"}, "hf_jobs: results_repo 'my org/runs': not a Hub repo id"),
        ({"results_repo": "../../etc"}, "not a Hub repo id"),
        ({"results_path": "../.."}, "hf_jobs: results_path '../..': expected a folder of the repo"),
        ({"results_path": "/abs/path"}, "hf_jobs: results_path '/abs/path': expected a folder of the repo"),
        ({"results_path": "a/../../b"}, "results_path 'a/../../b'"),
        ({"results_path": "a//b"}, "results_path 'a//b'"),
        ({"results_path": "a\\..\\b"}, "results_path"),
        (
            {"timeout": "1.5x"},
            "hf_jobs: timeout '1.5x': expected the seconds (3600) or a number with s, m, h or d",
        ),
        ({"timeout": "0"}, "timeout '0': expected"),
        ({"timeout": 0}, "timeout 0: expected"),
        ({"timeout": "0.1s"}, "at least 1 second"),
        ({"timeout": "-5m"}, "timeout '-5m'"),
        ({"timeout": "1e3"}, "timeout '1e3'"),
        ({"timeout": True}, "timeout"),
        ({"token_env": "MY TOKEN"}, "hf_jobs: token_env: expected the NAME of the environment variable"),
        ({"token_env": TOKEN}, "token_env: expected the NAME"),
        (
            {"extras": "eval] @ https://example.org/evil.whl"},
            "hf_jobs: extras 'eval] @ https://example.org/evil.whl': ",
        ),
        ({"extras": "eval,nope"}, "'nope' is not an extra of mm-spubench"),
        ({"namespace": "a/b"}, "hf_jobs: namespace 'a/b': expected a Hub user or organisation name"),
        ({"python": "3.12; rm -rf /"}, "hf_jobs: python '3.12; rm -rf /'"),
    ],
)
def test_bad_hf_jobs_values_are_refused_when_the_file_is_read_before_any_job(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    standin: StandInJobs,
    hf: dict[str, Any],
    expected: str,
) -> None:
    path = _hf(tmp_path, **hf)
    for dry in (["--dry-run"], []):
        err = _one_line(capsys, ["sweep", str(path), "--launcher", "hf-jobs", *dry])
        assert "sweep.yaml: " in err and expected in err, err
        assert TOKEN not in err
    # refused whatever the launcher: the file is checked in full
    assert expected in _one_line(capsys, ["sweep", str(path), "--dry-run"])
    assert standin.calls == [] and not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("given", "seconds"),
    [
        (3600, 3600),
        ("3600", 3600),
        ("30m", 1800),
        ("2h", 7200),
        ("1.5h", 5400),
        ("1d", 86400),
        ("90s", 90),
        (" 5m ", 300),
    ],
)
def test_the_timeouts_the_hub_reads_are_read_as_whole_seconds(given: object, seconds: int) -> None:
    """As ``huggingface_hub`` turns ``run_uv_job(timeout=)`` into ``timeoutSeconds``."""
    from mmspubench.sweep.launchers.hf_jobs_checks import timeout_seconds

    assert timeout_seconds(given) == seconds
    settings = settings_of(get_launcher("hf-jobs"), {**HF, "timeout": given}, "sweep.yaml: hf_jobs")
    assert settings.timeout == seconds


def test_the_documented_hf_jobs_section_is_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``timeout: 3600`` (an integer in YAML) and the page's own example keys."""
    path = _hf(
        tmp_path,
        timeout=3600,
        results_path="sweeps/2025/",
        extras="eval,models",
        namespace="my-org",
        python="3.12",
    )
    assert main(["sweep", str(path), "--launcher", "hf-jobs", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "timeout 3600 s" in out and "sweeps/2025/runs/biased--standard" in out


# --- hf_jobs: the token of every Hub call, and the dry run --------------------------------------


@pytest.mark.parametrize(("value", "state"), [(None, "is not set"), ("", "is empty"), ("  ", "is empty")])
def test_a_missing_or_empty_token_variable_is_one_line_naming_it(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    standin: StandInJobs,
    monkeypatch: pytest.MonkeyPatch,
    value: str | None,
    state: str,
) -> None:
    monkeypatch.setenv("HF_TOKEN", TOKEN)  # another variable's token is not used instead
    if value is None:
        monkeypatch.delenv("MY_HUB_TOKEN", raising=False)
    else:
        monkeypatch.setenv("MY_HUB_TOKEN", value)
    err = _one_line(capsys, ["sweep", str(_hf(tmp_path, token_env="MY_HUB_TOKEN")), "--launcher", "hf-jobs"])
    assert f"$MY_HUB_TOKEN {state}" in err and TOKEN not in err, err
    assert standin.calls == []


def test_every_hub_call_is_made_with_the_token_of_token_env(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], standin: StandInJobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not the ambient HF_TOKEN nor a cached login: the token of the variable the file names."""
    mine = "hf_theSweepsOwnTokenValue0123456789ab"
    monkeypatch.setenv("MY_HUB_TOKEN", mine)
    (tmp_path / "fake.whl").write_bytes(b"")
    monkeypatch.setattr(hf_jobs.wheel, "build", lambda out: tmp_path / "fake.whl")  # the slow test builds it
    script = tmp_path / "job.py"  # a job that crashes at once (the slow test runs the real script)
    script.write_text("print('worker crashed'); raise SystemExit(1)\n", encoding="utf-8")
    monkeypatch.setattr(hf_jobs, "SCRIPT", script)
    broken = [{"name": "broken", "model": str(BIASED_MODEL)}]
    path = write_sweep(
        tmp_path, variants=["standard"], models=broken, hf_jobs={**HF, "token_env": "MY_HUB_TOKEN"}
    )
    assert main(["sweep", str(path), "--launcher", "hf-jobs", "--no-wait"]) == 0
    standin.jobs["job001"].proc.wait(timeout=300)
    try:  # collects the failed job (inspect, logs), then sends it again (a crash is retried)
        assert main(["sweep", str(path), "--launcher", "hf-jobs", "--no-wait"]) == 0
    finally:
        for job in standin.jobs.values():
            job.proc.kill()
            job.proc.wait()
    names = [name for name, _ in standin.tokens]
    assert names == [
        "list_jobs_hardware",
        "run_uv_job",
        "list_jobs_hardware",
        "inspect_job",
        "fetch_job_logs",
        "run_uv_job",
    ], names
    assert {token for _, token in standin.tokens} == {mine}  # the slow end-to-end test: wait, download
    assert standin.calls[1][1]["secrets"] == {"MY_HUB_TOKEN": mine}
    out = capsys.readouterr()
    assert mine not in out.out + out.err and "broken--standard: failed: job job001 ended ERROR" in out.out


def test_the_hf_jobs_dry_run_prints_each_job_offline_and_the_secrets_name_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], standin: StandInJobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mmspubench.eval.results import package_version

    monkeypatch.setattr(hf_jobs.wheel, "build", lambda out: pytest.fail("the dry run built the wheel"))
    path = _hf(tmp_path, timeout="1.5h", flavor="a10g-small")
    assert main(["sweep", str(path), "--launcher", "hf-jobs", "--dry-run"]) == 0
    out = capsys.readouterr().out
    wheel = f"mm_spubench-{package_version()}-py3-none-any.whl"
    assert (
        f"hf-jobs: 1 jobs, flavor a10g-small, timeout 5400 s, secret HF_TOKEN (sent by name; its value is "
        f"never shown), wheel {wheel} (version {package_version()}," in out
    )
    job = [line for line in out.splitlines() if line.startswith("job biased--standard: ")]
    assert job == [
        f"job biased--standard: uv run hf_job_script.py {wheel} eval org/sweep-results "
        f"sweeps/runs/biased--standard HF_TOKEN -- --model {TWO_MODELS[0]['model']} --metrics accuracy "
        "--limit 2 --answer-mode logprob --batch-size 2 --no-progress"
    ]
    assert "flavor 'a10g-small' was not checked" in out and TOKEN not in out
    assert standin.calls == [] and not (tmp_path / "runs").exists()


def test_yaml_dump_of_the_documented_keys_round_trips() -> None:
    """The repeated-key check leaves an ordinary file as PyYAML reads it."""
    from mmspubench.sweep.spec_yaml import load_yaml

    doc = {"root": "r", "models": [{"model": "m", "options": {"limit": 2}}], "hf_jobs": HF}
    assert load_yaml(Path("x.yaml"), yaml.safe_dump(doc)) == doc
