"""Every family through ``mmspubench eval``: the matrix (slow), a representative few by default.

The model table of docs/evaluate/models.md is this matrix's output (``python -m tests.eval.families.matrix``); the
full run checks it line by line, the default run checks the lines of the families it covers.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from mmspubench.eval.backends.transformers import fast_families

from tests.eval.families.matrix import Row, markdown, run_family
from tests.eval.families.registry import BUILDERS, EXPECTED_ERRORS, FAST_SUITE
from tests.eval.families.registry import expected_error as expected_error_for

ROOT = Path(__file__).resolve().parents[3]
TOLERANCE = 1e-4


@pytest.fixture(scope="session")
def family_root(session_cache: Path) -> Path:
    root = session_cache / "families"
    root.mkdir(exist_ok=True)
    return root


@pytest.fixture(scope="session")
def matrix_rows() -> dict[str, Row]:
    return {}


MODELS_PAGE = ROOT / "docs" / "evaluate" / "models.md"
"""The documentation page that holds the matrix's table (between the family-matrix markers)."""


def _readme_rows() -> dict[str, str]:
    text = MODELS_PAGE.read_text(encoding="utf-8")
    block = text.split("<!-- family-matrix:start -->")[1].split("<!-- family-matrix:end -->")[0]
    return {m.group(1): line for line in block.splitlines() if (m := re.match(r"\| (\w+) \|", line))}


def _check(row: Row) -> None:
    expected_error = expected_error_for(row.family)
    if expected_error is not None:
        assert row.error is not None and expected_error in row.error
        assert len(row.error.splitlines()) == 1 and row.error.startswith("mmspubench eval: error:")
        assert f"(family {row.family})" in row.error
        return
    assert row.error is None, row.error
    assert row.max_diff is not None and row.max_diff <= TOLERANCE, row
    # The scores depend on the context far beyond the tolerance, so equality is a real check.
    assert row.spread is not None and row.spread >= 100 * TOLERANCE, row
    if row.family in fast_families.EXACT_FAMILIES:
        assert row.scorer_used == "fast" and row.fallback_reason is None, row
    else:
        assert row.scorer_used == "plain" and row.fallback_reason, row


def _run(family: str, family_root: Path, tmp_path: Path, rows: dict[str, Row]) -> Row:
    if family in EXPECTED_ERRORS and importlib.util.find_spec("torchvision") is not None:
        pytest.skip(f"{family}: torchvision is installed; this matrix row is for a machine without it")
    row = run_family(family, family_root, tmp_path)
    rows[family] = row
    _check(row)
    if expected_error_for(family) == EXPECTED_ERRORS.get(family):  # the README's environment
        assert _readme_rows().get(family) == markdown([row]).splitlines()[-1]
    return row


@pytest.mark.parametrize("family", FAST_SUITE)
def test_family_runs_end_to_end(
    family: str, family_root: Path, tmp_path: Path, matrix_rows: dict[str, Row]
) -> None:
    _run(family, family_root, tmp_path, matrix_rows)


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(set(BUILDERS) - set(FAST_SUITE)))
def test_family_runs_end_to_end_all(
    family: str, family_root: Path, tmp_path: Path, matrix_rows: dict[str, Row]
) -> None:
    _run(family, family_root, tmp_path, matrix_rows)


@pytest.mark.slow
def test_matrix_meets_the_bar_and_readme_is_its_output(
    family_root: Path, tmp_path: Path, matrix_rows: dict[str, Row]
) -> None:
    """At least 18 families end to end, at least 8 on the fast scorer; the models page's table is the matrix."""
    for family in sorted(set(BUILDERS) - set(matrix_rows)):
        _run(family, family_root, tmp_path / family, matrix_rows)
    rows = list(matrix_rows.values())
    assert sum(r.error is None for r in rows) >= 18
    if any(expected_error_for(f) != EXPECTED_ERRORS.get(f) for f in BUILDERS):
        pytest.skip(
            "a package of the models extra is missing: the models page's table describes a full install"
        )
    assert sum(r.scorer_used == "fast" for r in rows) >= 8
    assert set(_readme_rows()) == set(BUILDERS)
    assert "\n".join(_readme_rows()[f] for f in sorted(BUILDERS)) == "\n".join(
        markdown(rows).splitlines()[2:]
    )


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["on", "off"])
def test_the_thinking_family_runs_on_and_off_end_to_end(mode: str, family_root: Path, tmp_path: Path) -> None:
    """A tiny random Qwen3-VL with Qwen3's thinking chat template (it switches with
    ``enable_thinking``), through ``mmspubench eval --thinking on|off`` as the matrix runs a family:
    generate with the plain scorer, logprob with the fast one, CGLA in both (equal within the
    tolerance), the mode recorded and every scored prompt rendered with the empty reasoning block."""
    import json

    from mmspubench.eval import prompts

    from tests.eval.families.matrix import ITEMS, eval_command
    from tests.eval.thinking.models import EMPTY_BLOCK, SWITCHABLE, build_thinking_model

    folder = family_root / "family-qwen3_vl-thinking"
    if not folder.is_dir():
        build_thinking_model(family_root / ".family-qwen3_vl-thinking.partial", SWITCHABLE).rename(folder)
    cgls = {}
    for answer_mode, scorer in (("generate", "plain"), ("logprob", "fast")):
        out = tmp_path / answer_mode
        argv = ["--model", str(folder), "--thinking", mode, "--answer-mode", answer_mode, "--scorer", scorer]
        code, err = eval_command([*argv, "--max-new-tokens", "4", "--out", str(out)])
        assert code == 0, err
        results = json.loads((out / "results.json").read_text())
        assert results["config"]["thinking"] == mode and results["dataset"]["n"] == ITEMS
        assert results["model"]["thinking"]["set_by"] == "chat_template_kwargs:enable_thinking"
        samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
        conditions = [c for s in samples for c in s["conditions"]]
        assert all(c["prompt"].endswith(EMPTY_BLOCK + prompts.CGLA_ASSISTANT_PREFIX) for c in conditions)
        cgls[scorer] = [c["cgl"] for c in conditions]
    assert max(abs(a - b) for a, b in zip(cgls["plain"], cgls["fast"], strict=True)) <= TOLERANCE
