"""results.json records the engine; the transformers default is unchanged by the engine options."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import transformers
from mmspubench import evaluate
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.cli import main


def test_transformers_run_records_its_backend(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["eval", "--limit", "2", "--out", str(out), "--no-progress", "--scorer", "plain"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["backend"] == {
        "name": "transformers",
        "version": transformers.__version__,
        "settings": {"scorer": "plain", "batch_size": 8, "device": "cpu"},
    }
    assert results["config"]["batch_size"] == 8 and results["accuracy_only"] is False


def test_vllm_refuses_several_launched_processes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    assert main(["eval", "--backend", "vllm", "--out", "unused"]) == 2
    assert "--backend vllm runs in one process" in capsys.readouterr().err


class _Closing:
    """A loaded backend with processes of its own (as vLLM's): records when it is closed."""

    def __init__(self, inner: Any, log: list[str]) -> None:
        self._inner, self._log = inner, log

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def close(self) -> None:
        self._log.append("closed")


@pytest.mark.parametrize("fails", [False, True])
def test_a_backend_with_close_is_closed_when_the_run_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: bool
) -> None:
    import dataclasses

    from mmspubench.eval import runner
    from mmspubench.eval.backends import registry

    log: list[str] = []
    real = registry.REGISTRY["transformers"]
    closing = dataclasses.replace(real, load=lambda *a: _Closing(real.load(*a), log))
    monkeypatch.setitem(registry.REGISTRY, "transformers", closing)
    if fails:

        def broken(*args: Any, **kwargs: Any) -> None:
            load = args[0]
            load()  # the engine is up, then the run fails
            raise MMSpuBenchError("failed mid-run")

        monkeypatch.setattr(runner, "run_eval", broken)
        with pytest.raises(MMSpuBenchError, match="failed mid-run"):
            evaluate(out=tmp_path / "run", limit=2, progress=False)
    else:
        assert evaluate(out=tmp_path / "run", limit=2, progress=False) is not None
    assert log == ["closed"]
