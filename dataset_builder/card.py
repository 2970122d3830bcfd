"""The dataset card (``README.md``) of a built folder: template + YAML metadata + computed statistics.

The template is the top-level ``card/README.md``. Its front matter holds the fixed metadata
(license, task categories, pretty name, citation); ``configs``, ``dataset_info`` and
``size_categories`` are added here from the data with the ``datasets`` helpers the Hub itself
reads, and the Table-1-style statistics are computed from the validated records.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import datasets
from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCard
from mmspubench.dataset_builder.eval_yaml import INSPECT_CONFIG
from mmspubench.dataset_builder.files import MAX_TEXT_BYTES, read_text_bounded
from mmspubench.dataset_builder.schema import SOURCES, SPURIOUS_TYPES, Item, features_for
from mmspubench.dataset_builder.split_ids import CARD_KEY, split_identity
from mmspubench.errors import MMSpuBenchError

TEMPLATE_PATH = Path(__file__).resolve().parent.parent / "card" / "README.md"
"""The card template, kept at the top level of the source tree (docs/DESIGN.md, "Layout")."""

DEFAULT_REPO_ID = "mmbench/MM-SpuBench"
_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")


@dataclass(frozen=True, slots=True)
class Statistics:
    """Table-1-style counts of one built split."""

    total: int
    """Number of items."""
    by_type: dict[str, int]
    """Canonical type name -> items carrying it (an item with two types counts in both)."""
    by_source: dict[str, int]
    """Source name -> items drawn from it."""


def compute_statistics(records: Sequence[Item]) -> Statistics:
    """Count items per spurious type and per source; every type and source appears, zeros included."""
    types = Counter(t for r in records for t in r.spurious_types)
    sources = Counter(r.source for r in records)
    return Statistics(
        total=len(records),
        by_type={t.name: types.get(t.name, 0) for t in SPURIOUS_TYPES},
        by_source={s: sources.get(s, 0) for s in SOURCES},
    )


def _pct(count: int, total: int) -> str:
    return f"{100 * count / total:.2f}%" if total else "n/a"


def statistics_table(stats: Statistics) -> str:
    """Markdown table in the layout of the paper's Table 1, plus the per-source rows."""
    lines = ["| Statistic | Value |", "|---|---|", f"| Total instances | {stats.total:,} |"]
    for t in SPURIOUS_TYPES:
        count = stats.by_type[t.name]
        lines.append(f"| {t.title} ({t.abbrev}) | {count:,} ({_pct(count, stats.total)}) |")
    for source, count in stats.by_source.items():
        if count:
            lines.append(f"| Source: {source} | {count:,} ({_pct(count, stats.total)}) |")
    return "\n".join(lines)


def _size_category(n: int) -> str:
    bounds = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")]
    return next((label for bound, label in bounds if n < bound), "n>1M")


def _build_note(stats: Statistics) -> str:
    if stats.by_source.get("synthetic", 0) == stats.total:
        return (
            "> This build holds **synthetic** items drawn by `mmspubench synth`, the procedural twin "
            "of the benchmark with the same schema; use it to test pipelines, not to rank models."
        )
    return "> Built from the raw MM-SpuBench release with `mmspubench build`."


def render_card(
    records: Sequence[Item],
    split_info: datasets.SplitInfo,
    download_size: int,
    *,
    repo_id: str = DEFAULT_REPO_ID,
    template: Path = TEMPLATE_PATH,
    image_matching: str = "",
) -> str:
    """The full ``README.md`` text of a built folder."""
    if not template.is_file():
        raise MMSpuBenchError(f"{template}: dataset card template not found")
    card = DatasetCard(read_text_bounded(template, MAX_TEXT_BYTES, "the card template"))
    data = card.data
    stats = compute_statistics(records)
    info = datasets.DatasetInfo(
        features=features_for(any(record.counterfactuals for record in records)),
        splits=datasets.SplitDict(),
        download_size=download_size,
        dataset_size=split_info.num_bytes,
    )
    info.splits.add(split_info)
    DatasetInfosDict({"default": info}).to_dataset_card_data(data)
    MetadataConfigs(
        {
            "default": {"data_files": [{"split": split_info.name, "path": f"data/{split_info.name}-*"}]},
            INSPECT_CONFIG: {
                "data_files": [{"split": split_info.name, "path": f"{INSPECT_CONFIG}/{split_info.name}-*"}]
            },
        }
    ).to_dataset_card_data(data)
    data["size_categories"] = [_size_category(stats.total)]
    ids = split_identity(r.id for r in records)
    data[CARD_KEY] = {split_info.name: {"n": ids["split_n"], "sha256": ids["ids_sha256"]}}
    values = {
        "build_note": _build_note(stats),
        "eval_tasks": _eval_tasks(),
        "counterfactuals_row": _counterfactuals_row(any(record.counterfactuals for record in records)),
        "image_matching": image_matching,
        "statistics": statistics_table(stats),
        "type_names": ", ".join(f"`{t.name}` ({t.abbrev})" for t in SPURIOUS_TYPES),
        "source_names": ", ".join(f"`{s}`" for s in SOURCES),
        "repo_id": repo_id,
        "license": str(data.get("license_details", data.get("license", "see the front matter"))),
        "citation": str(data.get("citation", "")).strip(),
    }
    body = _fill(card.text, values, template)
    return f"---\n{data.to_yaml()}\n---\n{body}"


def _eval_tasks() -> str:
    """The tasks of eval.yaml in words, from the declaration eval.yaml is written from."""
    from mmspubench.dataset_builder.eval_yaml import TASKS

    count = {1: "one task", 2: "two tasks", 3: "three tasks"}.get(len(TASKS), f"{len(TASKS)} tasks")
    return f"{count}, " + " and ".join(f"`{task.id}`" for task in TASKS)


def _counterfactuals_row(shipped: bool) -> str:
    """The fields table's row of ``counterfactuals``: the column of a build that ships them."""
    if not shipped:
        return ""
    return (
        "| `counterfactuals` | list of {`image`, `name`, `targets`, `description`} | the item's scene "
        "re-rendered with its cues changed (`name`: e.g. `cue-aligned`; `targets`: the spurious types "
        "it changes); empty for an item without |\n"
    )


def _fill(text: str, values: dict[str, str], template: Path) -> str:
    def sub(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise MMSpuBenchError(
                f"{template}: unknown placeholder {{{{{key}}}}}; known: {', '.join(values)}"
            )
        return values[key]

    return _PLACEHOLDER.sub(sub, text)
