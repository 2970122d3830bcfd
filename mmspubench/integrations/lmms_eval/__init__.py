"""The lmms-eval task folder ``mm_spubench/`` (package data; ``mmspubench integrations lmms-eval`` prints it)."""

from __future__ import annotations

from pathlib import Path

TASK_DIR = Path(__file__).resolve().parent / "mm_spubench"
"""The folder to pass as ``lmms-eval --include_path``."""
