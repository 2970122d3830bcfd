"""The content hash of the bundled release that the docs print (``repo@<hash7>``) is the one computed here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mmspubench.dataset_builder.defaults import default_dataset_dir
from mmspubench.dataset_builder.load import content_hash

ROOT = Path(__file__).resolve().parents[2]
PRINTED = re.compile(r"\brepo@([0-9a-f]{7})\b")
"""How ``report`` prints the bundled release: its folder name (``repo``), then the hash's first 7 characters."""


def printed_hashes() -> dict[str, set[str]]:
    """Every ``repo@<hash7>`` of README.md and docs/, by page."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found: dict[str, set[str]] = {}
    for page in pages:
        hashes = set(PRINTED.findall(page.read_text(encoding="utf-8")))
        if hashes:
            found[page.relative_to(ROOT).as_posix()] = hashes
    return found


def test_the_docs_print_the_content_hash_of_the_bundled_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MMSPUBENCH_CACHE", str(tmp_path / "cache"))  # generated and built here, now
    digest = content_hash(default_dataset_dir())
    found = printed_hashes()
    assert "docs/figures/report.md" in found  # the tables print it: the check has something to check
    wrong = {page: hashes for page, hashes in found.items() if hashes != {digest[:7]}}
    assert not wrong, f"the bundled release's content hash is {digest[:7]}; pages print {wrong}"
