"""Backends are plug-ins: a backend declared and registered here, in the test, runs ``evaluate()``.

And the shape of what a run records is that of the runs written before the plug-ins: a results.json
``config`` of such a run reads back and writes out unchanged, with the same resume identity.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mmspubench
import pytest
from mmspubench.cli import main
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import config
from mmspubench.eval.backends import registry
from mmspubench.eval.backends.plugin import Backend
from mmspubench.options import option

from tests.eval.fakes import FakeModel


@dataclass(frozen=True, slots=True)
class StandInOptions:
    """The stand-in engine's own option."""

    standin_delay: float = option(
        0.0,
        "stand-in: seconds per score call",
        arg_type=float,
        recorded=False,
        minimum=0,
        maximum=1,
        expect="0 to 1",
    )
    """Seconds each score call sleeps."""


SEEN: list[tuple[str | None, int | None, float]] = []


def _load(run: config.RunConfig, device: str) -> FakeModel:
    SEEN.append((run.model, run.batch_size, run.backend_options.standin_delay))
    return FakeModel(delay=run.backend_options.standin_delay)


def _check(options: StandInOptions, run: config.RunConfig) -> None:
    if run.model is None:
        raise MMSpuBenchError("--backend standin needs --model NAME")


STANDIN = Backend(name="standin", options=StandInOptions, default_batch_size=3, load=_load, check=_check)


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "REGISTRY", registry.REGISTRY.copy())
    registry.register(STANDIN)  # the one line a new backend adds to the registry
    SEEN.clear()


def test_a_backend_registered_by_the_test_runs_evaluate(standin: None, tmp_path: Path) -> None:
    results = mmspubench.evaluate(
        model="stand-in",
        out=tmp_path / "run",
        limit=5,
        backend="standin",
        standin_delay=0.001,
        progress=False,
    )
    assert results is not None and results["accuracy"]["n"] == 5
    assert results["config"]["backend"] == "standin" and results["config"]["batch_size"] == 3
    assert "standin_delay" not in results["config"]
    assert SEEN == [("stand-in", 3, 0.001)]


def test_its_options_get_flags_checks_and_refusals(standin: None, tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    config.add_arguments(parser)
    parsed = config.from_args(
        parser.parse_args(["--backend", "standin", "--model", "m", "--standin-delay", "0.5"])
    )
    assert parsed.backend_options == StandInOptions(standin_delay=0.5)
    with pytest.raises(MMSpuBenchError, match="--standin-delay must be 0 to 1, got 2"):
        config.with_options(None, {"model": "m", "backend": "standin", "standin_delay": 2})
    with pytest.raises(MMSpuBenchError, match="--standin-delay is used only with --backend standin"):
        config.with_options(None, {"model": "m", "standin_delay": 0.5})
    with pytest.raises(MMSpuBenchError, match="--base-url is used only with --backend openai"):
        config.with_options(None, {"model": "m", "backend": "standin", "base_url": "http://x"})
    with pytest.raises(MMSpuBenchError, match="--backend standin needs --model"):
        config.with_options(None, {"backend": "standin"})
    argv = [
        "eval",
        "--backend",
        "standin",
        "--model",
        "m",
        "--limit",
        "2",
        "--no-progress",
        "--out",
        str(tmp_path / "r"),
    ]
    assert main(argv) == 0 and SEEN == [("m", 3, 0.0)]


def test_an_option_name_is_declared_once() -> None:
    clashing = dataclasses.make_dataclass(
        "Clash", [("base_url", str | None, option(None, "x", recorded=False))]
    )
    with pytest.raises(ValueError, match="base_url already declared"):
        registry.register(dataclasses.replace(STANDIN, options=clashing))
    assert "standin" not in registry.REGISTRY


def test_an_unknown_backend_is_one_line_naming_the_choices() -> None:
    with pytest.raises(
        MMSpuBenchError, match="--backend 'nope': unknown; expected one of transformers, vllm, openai"
    ):
        config.with_options(None, {"backend": "nope"})


OLD_CONFIG: dict[str, Any] = {
    # results.json "config" of a run written before the backends became plug-ins (paths shortened)
    "model": "/models/tiny-llava-biased",
    "dataset": "/data/synthetic/repo",
    "split": "test",
    "dataset_revision": None,
    "unknown_keys": "error",
    "metrics": ["accuracy", "cgla"],
    "limit": 6,
    "answer_mode": "generate",
    "scorer": "fast",
    "batch_size": 8,
    "device": "cpu",
    "dtype": "float32",
    "core_reduction": "best",
    "seed": 0,
    "max_new_tokens": 16,
    "backend": "transformers",
    "prompts": {"version": "1", "system": "You are a helpful assistant."},
}
OLD_IDENTITY = [
    "model", "dataset", "split", "unknown_keys", "metrics", "limit", "answer_mode", "dtype", "core_reduction",
    "seed", "max_new_tokens", "prompts",
]  # fmt: skip
"""run.json's identity keys of that run, in order."""


def test_a_results_config_written_before_the_plugins_reads_and_writes_unchanged() -> None:
    run = config.RunConfig.from_json(json.loads(json.dumps(OLD_CONFIG)))
    # options added since (the prompt variants, the fast path's check) read as their defaults and
    # are written as such;
    # every option the old file had is written back unchanged, and the identity is the old one
    added = {"prompt_variant": "standard", "cgla_prompt_variant": "standard", "scorer_check": 1}
    written = run.to_json()
    assert {k: v for k, v in written.items() if k not in added} == OLD_CONFIG
    assert {k: written[k] for k in added} == added
    assert list(run.identity()) == OLD_IDENTITY
    for name in ("vllm", "openai"):
        assert config.RunConfig.from_json({**OLD_CONFIG, "backend": name}).backend_options == (
            registry.get_backend(name).options()
        )
