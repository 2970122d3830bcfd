"""``mmspubench report``: results.json files -> a Markdown table in the layout of the paper's Table 2.

One row per run: the model, the dataset (name and version), ``n`` (items evaluated, marked
``partial`` when a ``--limit`` run covered only part of its split), the accuracy per spurious type
(BG ... Sha.), ``Average`` (the mean of the per-type accuracies, as in the paper's Table 2),
``Overall`` (share of all items, each item counted once) and ``CGLA_acc``. Percentages with two decimals; ``—`` where a figure was not
computed (a type without items, a metric not run). When the runs record their continuation scorer
(``model.scorer_used``), a ``Scorer`` column shows it, and a note under the table gives the reason
of every fast-to-plain fallback (``model.scorer_fallback_reason``). A ``Variant`` column shows the
prompt variant when the runs' variants differ or one is not ``standard``; an ``attribute-hint`` run
reads ``attribute-hint (ceiling)`` and a note under the table says it is not a fair run. Runs with
confound views add ``Circular`` (all four rotations right), ``Blind`` (accuracy without the image),
``Gain`` (with minus without, points) and ``Worst`` (the lowest type with >= 10 items and its
accuracy), each shown only when a run has it. Generate-mode runs with a ``replies`` section add
``Unparsed``, ``Truncated`` and ``Read by`` (runs that reason or have a judge) and ``Tokens``
(runs that counted tokens): :mod:`mmspubench.eval.replies.cells`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.hub import display_name
from mmspubench.dataset_builder.schema import SPURIOUS_TYPES
from mmspubench.eval.environment import differences, shown_value
from mmspubench.eval.prompts import CEILING_NOTE, STANDARD
from mmspubench.eval.replies.cells import CELLS as REPLY_CELLS
from mmspubench.eval.replies.cells import READ_BY
from mmspubench.eval.results import RESULTS_NAME, read_results
from mmspubench.eval.variants import is_ceiling, recorded, variant_label
from mmspubench.eval.views.confounds.cells import DASH, pct, section, worst_types
from mmspubench.eval.views.registry import VIEWS

ACCURACY_ONLY = "acc. only"
"""CGLA_acc cell of an accuracy-only run (e.g. an API that returns no prompt log-probabilities)."""
PARTIAL = "partial"
"""Marker in the ``n`` cell of a run over only part of its split (``--limit``): ``16 of 90 (partial)``;
its figures are not comparable with a full run's."""


def _cell(text: str) -> str:
    """A table cell: one line, every non-printable character escaped, ``|`` escaped (names come from
    result files)."""
    return printable(text).replace("|", "\\|")


def printable(text: str) -> str:
    """``text`` with every non-printable character (ESC, NUL, newline, zero-width...) escaped, so a
    results.json cannot drive the terminal or break a table row."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def _model_name(results: Mapping[str, Any]) -> str:
    model = section(results, "model")
    # A local folder reads better by its last component; Hub ids keep their org/name form.
    return _cell(display_name(str(model.get("id") or model.get("path") or "?")))


def _dataset_name(results: Mapping[str, Any]) -> str:
    """``name@version`` (Hub id or folder, then revision or content hash), the split unless ``test``."""
    dataset = section(results, "dataset")
    name = display_name(str(dataset.get("id") or dataset.get("path") or "?"))
    version = dataset.get("revision") or dataset.get("content_hash")
    split = dataset.get("split")
    text = (
        name
        + (f"@{str(version)[:7]}" if version else "")
        + (f" ({split})" if split not in (None, "test") else "")
    )
    return _cell(text)


def _n(results: Mapping[str, Any]) -> str:
    """Items evaluated; ``k of N (partial)`` when the run covered only part of its split."""
    dataset = section(results, "dataset")
    n, split_n = dataset.get("n"), dataset.get("split_n")
    if n is None:
        n = section(results, "accuracy").get("n") or section(results, "cgla").get("n")
    if n is None:
        return DASH
    if isinstance(split_n, int) and isinstance(n, int) and n < split_n:
        return f"{n} of {split_n} ({PARTIAL})"
    return str(n)


def _by_type(abbrev: str) -> Callable[[Mapping[str, Any]], str]:
    return lambda results: pct(section(section(results, "accuracy"), "by_type").get(abbrev))


def _cgla(results: Mapping[str, Any]) -> str:
    cgla = section(results, "cgla")
    return ACCURACY_ONLY if results.get("accuracy_only") and not cgla else pct(cgla.get("acc"))


@dataclass(frozen=True, slots=True)
class Column:
    """One column of the table: its header and how a run's results.json becomes its cell."""

    header: str
    """Header text."""
    cell: Callable[[Mapping[str, Any]], str]
    """The cell of one run."""
    align_right: bool = True
    """Numbers align right; names left."""


COLUMNS: tuple[Column, ...] = (
    Column("Model", _model_name, align_right=False),
    Column("Dataset", _dataset_name, align_right=False),
    Column("n", _n),
    *(Column(t.abbrev, _by_type(t.abbrev)) for t in SPURIOUS_TYPES),
    Column("Average", lambda r: pct(section(r, "accuracy").get("average"))),
    Column("Overall", lambda r: pct(section(r, "accuracy").get("overall"))),
    Column("CGLA_acc", _cgla),
)
"""The columns every table has, in order; :func:`optional_columns` are added when the runs need them."""
HEADER = [c.header for c in COLUMNS]


def _scorer(results: Mapping[str, Any]) -> tuple[str, str | None]:
    model = section(results, "model")
    reason = model.get("scorer_fallback_reason")
    return printable(str(model.get("scorer_used") or DASH)), None if reason is None else printable(
        str(reason)
    )


def _scorer_cell(results: Mapping[str, Any]) -> str:
    used, reason = _scorer(results)
    return _cell(used) + ("*" if reason else "")


def _any_scorer(runs: Sequence[Mapping[str, Any]]) -> bool:
    return any(section(run, "model").get("scorer_used") for run in runs)


def _answer_mode(results: Mapping[str, Any]) -> str:
    return _cell(str(section(results, "config").get("answer_mode") or DASH))


def _answer_modes_differ(runs: Sequence[Mapping[str, Any]]) -> bool:
    return len({_answer_mode(run) for run in runs}) > 1


def _variant(results: Mapping[str, Any]) -> str:
    return _cell(variant_label(section(results, "config")))


def _variants_shown(runs: Sequence[Mapping[str, Any]]) -> bool:
    """The column shows when the runs' variants differ, or any run's is not ``standard``."""
    labels = {_variant(run) for run in runs}
    return len(labels) > 1 or labels != {STANDARD}


def _worst(results: Mapping[str, Any]) -> str:
    """``TYPE value`` of ``accuracy.worst_type`` (types with >= 10 items; ``TYPE/TYPE value`` for a tie)."""
    accuracy = section(results, "accuracy")
    worst = section(accuracy, "worst_type")
    return DASH if not worst else _cell(f"{worst_types(accuracy)} {pct(worst.get('value'))}")


def _any_worst(runs: Sequence[Mapping[str, Any]]) -> bool:
    return any("worst_type" in section(run, "accuracy") for run in runs)


Needed = Callable[[Sequence[Mapping[str, Any]]], bool]
"""Whether the table of these runs shows a column."""


def optional_columns() -> list[tuple[Column, Needed]]:
    """Columns shown only when the runs need them: (column, whether these runs need it); the
    registered views' columns (:mod:`mmspubench.eval.views`) in registry order, before ``Worst``."""
    views = [(Column(c.header, c.cell), c.shown) for view in VIEWS.values() for c in view.columns]
    return [
        (Column("Answer mode", _answer_mode, align_right=False), _answer_modes_differ),
        (Column("Variant", _variant, align_right=False), _variants_shown),
        (Column("Scorer", _scorer_cell, align_right=False), _any_scorer),
        *views,
        (Column("Worst", _worst, align_right=False), _any_worst),
        *(
            (Column(header, cell, align_right=header != READ_BY), shown)
            for header, cell, shown in REPLY_CELLS
        ),
    ]


def table_row(results: Mapping[str, Any]) -> list[str]:
    """The cells of one run's row (the columns every table has)."""
    return [c.cell(results) for c in COLUMNS]


def _notes(runs: Sequence[Mapping[str, Any]], with_scorer: bool) -> list[str]:
    notes = []
    for run in runs:
        if is_ceiling(recorded(section(run, "config"))):
            notes.append(f"{_model_name(run)}: attribute-hint is a {CEILING_NOTE}")
        reason = _scorer(run)[1]
        if with_scorer and reason:
            ran = "scored part of the run" if section(run, "model").get("scorer_used") == "mixed" else "ran"
            notes.append(
                f"\\* {_model_name(run)}: the fast scorer was asked for, the plain one {ran} ({reason})"
            )
    models = {str(section(run, "model").get("id")) for run in runs}
    differing = differences([run.get("environment") for run in runs], same_model=len(models) == 1)
    if differing:
        fields = "; ".join(
            f"{_cell(key)} ({' / '.join(_cell(shown_value(v)) for v in values)})" for key, values in differing
        )
        notes.append(f"The runs differ in what produced them, in row order: {fields}")
    return notes


RUN_HEADER = "Run"
"""The column that tells rows apart that the others do not (shown only then)."""
IDENTITY_HEADERS = frozenset({"Model", "Dataset", "n", "Answer mode", "Variant"})
"""The columns that say which run a row is; two rows alike in all of them get a ``Run`` column."""


def run_names(paths: Sequence[str | Path]) -> list[str]:
    """The names of the runs at ``paths`` (a run folder or its results.json) for the ``Run`` column:
    each folder's name, or the paths as given where two folders share a name."""
    folders = [Path(p) if Path(p).is_dir() else Path(p).parent for p in paths]
    names = [f.name or str(f) for f in folders]
    return names if len(set(names)) == len(names) else [str(f) for f in folders]


def markdown_table(runs: Sequence[Mapping[str, Any]], names: Sequence[str] | None = None) -> str:
    """The Markdown table for several runs, one row each, in the given order. Where two rows are
    alike in :data:`IDENTITY_HEADERS` a ``Run`` column follows ``Model``: ``names``
    (:func:`run_names`), or each run's ``created_at`` without them."""
    columns = [*COLUMNS, *(c for c, needed in optional_columns() if needed(runs))]
    rows = [[c.cell(run) for c in columns] for run in runs]
    # Rows that name the same model, dataset, n, answer mode and variant differ only in their
    # figures (two seeds, two prompts of one variant): the Run column tells them apart.
    told = [i for i, c in enumerate(columns) if c.header in IDENTITY_HEADERS]
    identities = [tuple(row[i] for i in told) for row in rows]
    if len(set(identities)) < len(identities):
        labels = list(names) if names is not None else [str(run.get("created_at") or DASH) for run in runs]
        columns.insert(1, Column(RUN_HEADER, lambda run: DASH, align_right=False))
        for row, label in zip(rows, labels, strict=True):
            row.insert(1, _cell(label))
    lines = [
        "| " + " | ".join(c.header for c in columns) + " |",
        "|" + "|".join("---:" if c.align_right else "---" for c in columns) + "|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    notes = _notes(runs, any(c.header == "Scorer" for c in columns))
    # the views' own tables (the interventions'), none without their sections
    extra = [line for view in VIEWS.values() if view.tables for line in view.tables(runs, _model_name, _cell)]
    return "\n".join(lines + (["", *notes] if notes else []) + extra)


def load_for_report(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Read results.json files (a run folder stands for its results.json)."""
    out = []
    for raw in paths:
        path = Path(raw)
        out.append(read_results(path / RESULTS_NAME if path.is_dir() else path))
    return out
