"""The text-prior control item by item: did the wording change the answers, and was the prior learned?

``bench/confound_controls.py --controls prior`` evaluates each model on two test releases that are
the same items, once with the planted wording in some questions (``prior``) and once without
(``balanced``). This script reads its run folders and compares the two answers of each **worded**
item (the items whose question differs between the releases), with the image and blind:

- correct worded / correct unworded, and the exact McNemar p of the paired difference
  (``mmspubench.eval.views.confounds.paired.mcnemar_exact``);
- how many answers the wording changed at all (the prediction or the raw output).

``--fit-check N`` also evaluates the text-prior model on the first N items of its own training
data (rebuilt from its ``training.json`` by the trainer's own ``load_items``: the same questions,
options and images it learned from), so "not learned" and "learned but not transferred" can be
told apart: a model that copies the named class should be right on nearly every worded training
item.

    python bench/confound_controls.py --out runs/prior --controls prior --modes generate
    python bench/confound_worded.py --out runs/prior --fit-check 450
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mmspubench.eval.bundled import ASSETS
from mmspubench.eval.views.confounds.paired import mcnemar_exact

PRIOR_MODEL = ASSETS / "tiny-llava-text-prior"
MODELS = ("text-prior", "balanced")
MODES = ("generate", "logprob")


def read_jsonl(path: Path) -> dict[str, dict[str, Any]]:
    """Records of a samples.jsonl by id (an id seen twice is refused)."""
    records: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            record = json.loads(line)
            if record["id"] in records:
                raise ValueError(f"{path}: line {number}: id {record['id']!r} seen twice")
            records[record["id"]] = record
    return records


def worded_ids(prior: Sequence[Mapping[str, Any]], balanced: Sequence[Mapping[str, Any]]) -> list[str]:
    """Ids whose question the planting changed; the two releases must be the same items otherwise."""
    other = {str(a["id"]): a for a in balanced}
    if set(other) != {str(a["id"]) for a in prior}:
        raise ValueError("the prior and balanced releases hold different item ids")
    worded = []
    for item in prior:
        twin = other[str(item["id"])]
        for key in ("options", "answer", "class_name", "spurious_types"):
            if item[key] != twin[key]:
                raise ValueError(f"item {item['id']!r}: field {key!r} differs between the releases")
        if item["question"] != twin["question"]:
            worded.append(str(item["id"]))
    return worded


def _said(answer: Mapping[str, Any]) -> tuple[Any, Any]:
    """What an answer says: its prediction and raw output (logprob mode records no raw text)."""
    return answer.get("prediction"), answer.get("raw_output")


def paired(
    ids: Sequence[str],
    worded: Mapping[str, Mapping[str, Any]],
    unworded: Mapping[str, Mapping[str, Any]],
    view: str,
) -> dict[str, Any]:
    """One model, mode and view (``with image`` or ``blind``) on the worded items, paired by id."""

    def answer(record: Mapping[str, Any]) -> Mapping[str, Any]:
        if view == "with image":
            return record
        if record.get("blind") is None:
            raise ValueError(f"record {record['id']!r}: no blind answer (run with --metrics accuracy,blind)")
        return record["blind"]

    a = [bool(answer(worded[i])["correct"]) for i in ids]
    b = [bool(answer(unworded[i])["correct"]) for i in ids]
    only_worded = sum(x and not y for x, y in zip(a, b, strict=True))
    only_unworded = sum(y and not x for x, y in zip(a, b, strict=True))
    changed = sum(_said(answer(worded[i])) != _said(answer(unworded[i])) for i in ids)
    return {
        "view": view,
        "n": len(ids),
        "worded": sum(a),
        "unworded": sum(b),
        "p": mcnemar_exact(only_worded, only_unworded),
        "changed": changed,
    }


def worded_rows(out: Path) -> list[dict[str, Any]]:
    """Rows of every (model, mode) whose two runs exist under ``out/runs``."""
    releases = out / "releases"
    prior = json.loads((releases / "prior" / "annotation.json").read_text(encoding="utf-8"))
    balanced = json.loads((releases / "balanced" / "annotation.json").read_text(encoding="utf-8"))
    ids = worded_ids(prior, balanced)
    rows = []
    for model in MODELS:
        for mode in MODES:
            a, b = (
                out / "runs" / f"prior-{model}-{r}-{mode}" / "samples.jsonl" for r in ("prior", "balanced")
            )
            if not (a.is_file() and b.is_file()):
                continue
            worded, unworded = read_jsonl(a), read_jsonl(b)
            for view in ("with image", "blind"):
                rows.append({"model": model, "mode": mode, **paired(ids, worded, unworded, view)})
    return rows


def _share(count: int, n: int) -> str:
    return f"{count} ({100.0 * count / n:.1f} %)" if n else "n/a"


def worded_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The paired table: each worded item answered with and without its wording."""
    lines = [
        "| model | answer mode | view | worded items | correct, worded | correct, unworded | McNemar p "
        "| answers changed by the wording |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['mode']} | {r['view']} | {r['n']} | {_share(r['worded'], r['n'])} | "
            f"{_share(r['unworded'], r['n'])} | {r['p']:.2g} | {r['changed']} |"
        )
    return "\n".join(lines)


def fit_rows(samples: Mapping[str, Mapping[str, Any]], worded: set[str]) -> list[dict[str, Any]]:
    """Accuracy on training items, worded (``worded``: their ids) and not, with the image and blind."""
    rows = []
    for label, inside in (("worded", True), ("not worded", False)):
        ids = [i for i in samples if (i in worded) == inside]
        for view in ("with image", "blind"):
            answers = [samples[i] if view == "with image" else samples[i]["blind"] for i in ids]
            rows.append(
                {
                    "items": label,
                    "view": view,
                    "n": len(ids),
                    "correct": sum(bool(a["correct"]) for a in answers),
                    "unparsed": sum(a["prediction"] is None for a in answers),
                }
            )
    return rows


def fit_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The fit check: the text-prior model on its own training items."""
    lines = [
        "| training items | view | n | correct | unparsed |",
        "|---|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['items']} | {r['view']} | {r['n']} | {_share(r['correct'], r['n'])} | {r['unparsed']} |"
        )
    return "\n".join(lines)


def fit_check(model: Path, out: Path, n: int, batch_size: int) -> str:
    """Evaluate ``model`` (generate mode, with the blind view) on the first ``n`` of its training items."""
    from dataclasses import replace

    from mmspubench.dataset_builder.synth.generate import write_release
    from mmspubench.eval.api import evaluate
    from mmspubench.eval.tiny.train import config_from_json, training_items

    config = config_from_json(json.loads((model / "training.json").read_text(encoding="utf-8"))["config"])
    items = training_items(config, n)
    plain = training_items(replace(config, text_prior_types=None), n)  # the same items without the wording
    worded = {str(a.id) for a, b in zip(items, plain, strict=True) if a.question != b.question}
    release = write_release(out / "releases" / "training-items", items, overwrite=True)
    run = out / "runs" / "fit-text-prior-training-items-generate"
    evaluate(
        str(model),
        str(release),
        str(run),
        metrics=("accuracy", "blind"),
        answer_mode="generate",
        batch_size=batch_size,
        progress=False,
    )
    return fit_table(fit_rows(read_jsonl(run / "samples.jsonl"), worded))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="the --out folder of confound_controls.py")
    parser.add_argument(
        "--fit-check",
        type=int,
        default=0,
        metavar="N",
        help="also evaluate on N training items (default: no)",
    )
    parser.add_argument("--text-prior-model", type=Path, default=PRIOR_MODEL)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args(argv)
    if not (args.out / "releases" / "prior" / "annotation.json").is_file():
        parser.error(
            f"{args.out}: no releases/prior/annotation.json (run confound_controls.py --controls prior)"
        )
    if args.fit_check < 0:
        parser.error(f"--fit-check must be positive, got {args.fit_check}")
    tables = [worded_table(worded_rows(args.out))]
    if args.fit_check:
        tables.append(fit_check(args.text_prior_model, args.out, args.fit_check, args.batch_size))
    text = "".join(f"{t}\n\n" for t in tables)
    (args.out / "worded.md").write_text(text, encoding="utf-8")
    print(text, end="")
    print(f"wrote {args.out / 'worded.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
