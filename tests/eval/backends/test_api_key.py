"""The default ``--api-key-env`` is one constant, read by the openai backend and ``curate annotate``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from mmspubench.curate.annotate import AnnotateConfig
from mmspubench.eval.backends import openai as openai_backend
from mmspubench.eval.backends.api_key import DEFAULT_KEY_ENV
from mmspubench.eval.config import RunConfig

ROOT = Path(__file__).resolve().parents[3]


def _default(cls: type, name: str) -> object:
    return next(f.default for f in dataclasses.fields(cls) if f.name == name)


def test_both_options_default_to_the_one_constant() -> None:
    assert DEFAULT_KEY_ENV == "OPENAI_API_KEY"
    assert _default(openai_backend.Options, "api_key_env") == DEFAULT_KEY_ENV
    assert _default(AnnotateConfig, "api_key_env") == DEFAULT_KEY_ENV
    assert _default(RunConfig, "judge_api_key_env") == DEFAULT_KEY_ENV


def test_the_default_name_is_written_once_in_the_package() -> None:
    holders = [
        path.relative_to(ROOT).as_posix()
        for path in sorted(ROOT.rglob("*.py"))
        if not path.relative_to(ROOT).parts[0].startswith((".", "tests"))
        for _ in range(path.read_text(encoding="utf-8").count('"OPENAI_API_KEY"'))
    ]
    assert holders == ["eval/backends/api_key.py"]
