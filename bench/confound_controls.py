"""Positive controls for the confound views: do circular evaluation and the blind baseline expose a
confound we planted on purpose?

Two tiny LLaVA models trained like the bundled ones (``mmspubench.eval.tiny.train``, same budget,
balanced spurious values) with one confound planted in their training data (``synth.confounds``):

- ``letter-bias``: the gold answer of 90% of the training items at letter A (``--letter-bias A:0.9``);
- ``text-prior``: on some types the question names the class (``--text-prior-types ...``).

Each is evaluated with ``mmspubench eval`` (``mmspubench.eval.api.evaluate``) beside the balanced
twin (``eval/assets/tiny-llava-balanced``) on synthetic benchmark releases (seed 1, spurious
values random): ``balanced`` (letters balanced, no wording), ``skewed`` (the gold letters skewed as
planted: a benchmark whose vanilla accuracy rewards the bias), ``prior`` (questions worded as
planted), and grey-image copies of ``prior`` and ``balanced`` (every image replaced by mid-grey: a
stand-in for the blind view that runs with today's metrics). Printed: for the letter bias, vanilla
accuracy vs circular accuracy vs letter_share; for the text prior, the accuracy per type without
the image (blind, and with a grey image), planted types marked ``*``.

``--accuracy-only`` runs the part that does not need the confound metrics (``--metrics accuracy``):
vanilla accuracy, the letter share of the published-order answers (from samples.jsonl), and the
grey-image accuracy per type. Run folders go to ``OUT/runs/<control>-<model>-<release>-<mode>/``; the tables
to ``OUT/tables.md`` and their inputs to ``OUT/summary.json``.

    python bench/confound_controls.py --out runs/confound-controls
    python bench/confound_controls.py --out runs/confound-controls --accuracy-only
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.folders import replace_folder
from mmspubench.dataset_builder.schema import ANSWER_LETTERS, SPURIOUS_TYPES, TYPE_ABBREV
from mmspubench.eval.bundled import ASSETS, BALANCED_MODEL
from mmspubench.eval.views.confounds.metrics import UNPARSED

LETTER_MODEL = ASSETS / "tiny-llava-letter-bias"
PRIOR_MODEL = ASSETS / "tiny-llava-text-prior"
EVAL_SEED = 1
"""Seed of the test releases; the control models were trained on seed-0 training-mode items."""
ABBREVS = tuple(t.abbrev for t in SPURIOUS_TYPES)
MISSING = "n/a"


# ---------------------------------------------------------------- what was planted


def planted(model_dir: Path) -> dict[str, Any]:
    """The planting options recorded in a model's training.json (``None`` where not planted)."""
    config = json.loads((Path(model_dir) / "training.json").read_text(encoding="utf-8"))["config"]
    bias = config.get("letter_bias")
    types = config.get("text_prior_types")
    return {
        "letter_bias": None if bias is None else (str(bias[0]), float(bias[1])),
        "text_prior_types": None if types is None else tuple(types),
    }


# ---------------------------------------------------------------- test releases


def write_releases(
    out: Path, *, n: int, seed: int, image_size: int, letter_bias: Any, prior_types: Any
) -> dict[str, Path]:
    """The synthetic test releases (``mmspubench synth`` layout) under ``out``, by name."""
    from mmspubench.dataset_builder.synth.generate import generate_items, write_release

    def items(**planting: Any) -> Any:
        return generate_items(n, seed=seed, image_size=image_size, mode="benchmark", cue="random", **planting)

    releases = {"balanced": write_release(out / "balanced", items())}
    if letter_bias is not None:
        releases["skewed"] = write_release(out / "skewed", items(letter_bias=letter_bias))
    if prior_types is not None:
        releases["prior"] = write_release(out / "prior", items(text_prior_types=prior_types))
        releases["prior-grey"] = grey_copy(releases["prior"], out / "prior-grey")
        releases["balanced-grey"] = grey_copy(releases["balanced"], out / "balanced-grey")
    return releases


def grey_copy(release: Path, out: Path) -> Path:
    """A copy of a raw release with every image replaced by a mid-grey image of the same size."""
    from PIL import Image

    shutil.copytree(release, out)
    for path in sorted((out / "data" / "images").iterdir()):
        with Image.open(path) as image:
            size = image.size
        Image.new("RGB", size, (128, 128, 128)).save(path, format="PNG")
    return out


# ---------------------------------------------------------------- rows from results


def published_letter_share(samples: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Percent of the published-order answers at each letter A-D and unparsed (over all answers),
    the shape of results.json ``circular.letter_share`` (which is over all rotations, in 0-1)."""
    if not samples:
        raise ValueError("letter shares of zero answers are undefined")
    predictions = [s.get("prediction") for s in samples]
    shares = {x: 100.0 * predictions.count(x) / len(predictions) for x in ANSWER_LETTERS}
    return shares | {UNPARSED: 100.0 * sum(p not in ANSWER_LETTERS for p in predictions) / len(predictions)}


def as_percent(shares: Mapping[str, Any]) -> dict[str, float]:
    """results.json ``circular.letter_share`` (fractions 0-1 of all rotation answers per letter A-D
    and ``unparsed``, summing to 1) in percent; anything else is refused naming the field."""
    keys = (*ANSWER_LETTERS, UNPARSED)
    if set(shares) != set(keys) or not all(isinstance(shares[k], int | float) for k in keys):
        raise ValueError(f"circular.letter_share: expected numbers for {list(keys)}, got {dict(shares)!r}")
    values = {k: float(shares[k]) for k in keys}
    if any(not 0.0 <= v <= 1.0 for v in values.values()) or abs(sum(values.values()) - 1.0) > 1e-6:
        raise ValueError(f"circular.letter_share: expected fractions summing to 1, got {values!r}")
    return {k: 100.0 * v for k, v in values.items()}


def letter_row(
    run: Mapping[str, Any], results: Mapping[str, Any], samples: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """One row of the letter-bias table: vanilla, circular and letter shares of one run."""
    circular = results.get("circular")
    row: dict[str, Any] = {
        **run,
        "n": results["accuracy"]["n"],
        "vanilla": results["accuracy"]["overall"],
        "circular": None,
        "rotation": None,
        "consistency": None,
        "position_bias_p": None,
    }
    if circular is None:
        return {**row, "letter_share": published_letter_share(samples), "shares_over": "published order"}
    return {
        **row,
        "vanilla": circular["vanilla_accuracy"],
        "circular": circular["accuracy"],
        "rotation": circular["rotation_accuracy"],
        "consistency": circular["consistency"],
        "position_bias_p": circular["position_bias_p"],
        "letter_share": as_percent(circular["letter_share"]),
        "shares_over": "all rotations",
    }


def prior_rows(run: Mapping[str, Any], results: Mapping[str, Any], grey: bool) -> list[dict[str, Any]]:
    """Rows of the text-prior table: accuracy per type with the image, and without it (blind or grey)."""
    accuracy = results["accuracy"]
    if grey:
        return [{**run, "view": "grey image", "n": accuracy["n"], "by_type": dict(accuracy["by_type"])}]
    rows = [{**run, "view": "with image", "n": accuracy["n"], "by_type": dict(accuracy["by_type"])}]
    if "blind" in results:
        blind = results["blind"]
        keys = ("accuracy", "gain", "gain_ci95", "gain_p_value", "only_with_image", "only_blind", "unparsed")
        view = f"blind ({blind['image']})"
        rows.append(
            {
                **run,
                "view": view,
                "n": blind["n"],
                "by_type": dict(blind["by_type"]),
                "blind": {k: blind[k] for k in keys},
            }
        )
    return rows


# ---------------------------------------------------------------- tables


def _pct(value: float | None) -> str:
    return MISSING if value is None else f"{value:.1f}"


def letter_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Vanilla accuracy vs circular accuracy vs letter shares, one row per (model, release, mode)."""
    lines = [
        "| model | test release | answer mode | n | vanilla % | circular % | rotation mean % | consistency % "
        "| A % | B % | C % | D % | unparsed % | shares over | position-bias p |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        shares = " | ".join(f"{r['letter_share'][x]:.1f}" for x in (*ANSWER_LETTERS, UNPARSED))
        p = MISSING if r["position_bias_p"] is None else f"{r['position_bias_p']:.2g}"
        lines.append(
            f"| {r['model']} | {r['release']} | {r['mode']} | {r['n']} | {_pct(r['vanilla'])} | "
            f"{_pct(r['circular'])} | {_pct(r['rotation'])} | {_pct(r['consistency'])} | {shares} | "
            f"{r['shares_over']} | {p} |"
        )
    return "\n".join(lines)


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def prior_table(rows: Sequence[Mapping[str, Any]], prior_types: Sequence[str]) -> str:
    """Accuracy per type (planted types marked ``*``), with the means over planted and other types."""
    marked = {TYPE_ABBREV[t] for t in prior_types}
    heads = " | ".join(f"{a}{'*' if a in marked else ''}" for a in ABBREVS)
    lines = [
        f"| model | test release | answer mode | view | n | {heads} | planted mean | others mean |",
        "|---|---|---|---|---:|" + "---:|" * (len(ABBREVS) + 2),
    ]
    for r in rows:
        by_type = r["by_type"]
        cells = " | ".join(_pct(by_type.get(a)) for a in ABBREVS)
        inside = _mean([by_type.get(a) for a in ABBREVS if a in marked])
        outside = _mean([by_type.get(a) for a in ABBREVS if a not in marked])
        lines.append(
            f"| {r['model']} | {r['release']} | {r['mode']} | {r['view']} | {r['n']} | {cells} | "
            f"{_pct(inside)} | {_pct(outside)} |"
        )
    return "\n".join(lines)


def gain_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Blind accuracy and the paired gain of the image (results.json ``blind``), one row per blind run."""
    lines = [
        "| model | test release | answer mode | view | n | blind % | gain pp [95% CI] | McNemar p "
        "| only with image | only blind | unparsed blind |",
        "|---|---|---|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        if "blind" not in r:
            continue
        b = r["blind"]
        low, high = b["gain_ci95"]
        lines.append(
            f"| {r['model']} | {r['release']} | {r['mode']} | {r['view']} | {r['n']} | {b['accuracy']:.1f} | "
            f"{b['gain']:+.1f} [{low:+.1f}, {high:+.1f}] | {b['gain_p_value']:.2g} | {b['only_with_image']} | "
            f"{b['only_blind']} | {b['unparsed']} |"
        )
    return "\n".join(lines) if len(lines) > 2 else ""


def render_tables(
    letter_rows: Sequence[Mapping[str, Any]], prior: Sequence[Mapping[str, Any]], prior_types: Sequence[str]
) -> str:
    """The tables of the controls that ran (a control without rows prints nothing)."""
    tables = [letter_table(letter_rows)] if letter_rows else []
    tables += [prior_table(prior, prior_types)] if prior else []
    tables += [t for t in [gain_table(prior)] if t]
    return "".join(f"{t}\n\n" for t in tables)


# ---------------------------------------------------------------- running


def read_samples(run_dir: Path) -> list[dict[str, Any]]:
    """The records of a run folder's samples.jsonl."""
    text = (run_dir / "samples.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def evaluate(
    model: Path, dataset: Path, out: Path, metrics: Sequence[str], mode: str, options: Mapping[str, Any]
) -> dict[str, Any]:
    """One ``mmspubench eval`` run (in process); its results.json object."""
    from mmspubench.eval.api import evaluate as run_eval

    results = run_eval(
        str(model),
        str(dataset),
        str(out),
        metrics=tuple(metrics),
        answer_mode=mode,
        progress=False,
        **options,
    )
    assert results is not None  # a single process is always the main one
    return results


def plan(
    models: Mapping[str, Path], releases: Mapping[str, Path], accuracy_only: bool
) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(table, model, release, metrics) of every run: which model meets which release."""
    runs = []
    letter = ("accuracy",) if accuracy_only else ("accuracy", "circular")
    blind = ("accuracy",) if accuracy_only else ("accuracy", "blind")
    for release in ("balanced", "skewed"):
        runs += [("letter", m, release, letter) for m in ("letter-bias", "balanced") if release in releases]
    for release in ("prior", "balanced", "prior-grey", "balanced-grey"):
        metrics = ("accuracy",) if release.endswith("grey") else blind
        runs += [("prior", m, release, metrics) for m in ("text-prior", "balanced") if release in releases]
    # A control's runs (its twin's too) only when its model is given.
    control = {"letter": "letter-bias", "prior": "text-prior"}
    return [r for r in runs if r[1] in models and control[r[0]] in models]


def run_name(table: str, model: str, release: str, mode: str) -> str:
    """The run folder of one planned run: the control is part of it, because the twin meets the
    ``balanced`` release in both controls with different metrics."""
    return f"{table}-{model}-{release}-{mode}"


def run_all(
    models: Mapping[str, Path], out: Path, *, args: argparse.Namespace, options: Mapping[str, Any]
) -> dict[str, Any]:
    """Every planned run in every answer mode; writes runs/, summary.json and tables.md under ``out``."""
    bias = planted(models["letter-bias"])["letter_bias"] if "letter-bias" in models else None
    types = planted(models["text-prior"])["text_prior_types"] if "text-prior" in models else None
    releases = write_releases(
        out / "releases",
        n=args.n,
        seed=args.seed,
        image_size=args.image_size,
        letter_bias=bias,
        prior_types=types,
    )
    letter_rows: list[dict[str, Any]] = []
    prior: list[dict[str, Any]] = []
    for table, model, release, metrics in plan(models, releases, args.accuracy_only):
        for mode in args.modes:
            run_dir = out / "runs" / run_name(table, model, release, mode)
            run = {"model": model, "release": release, "mode": mode}
            results = evaluate(models[model], releases[release], run_dir, metrics, mode, options)
            if table == "letter":
                letter_rows.append(letter_row(run, results, read_samples(run_dir)))
            else:
                prior += prior_rows(run, results, grey=release.endswith("grey"))
            print(
                f"{model:12s} {release:14s} {mode:8s} accuracy {results['accuracy']['overall']:5.1f}",
                file=sys.stderr,
                flush=True,
            )
    tables = render_tables(letter_rows, prior, types or ())
    summary = {
        "planted": {"letter_bias": bias, "text_prior_types": types},
        "n": args.n,
        "seed": args.seed,
        "letter_rows": letter_rows,
        "prior_rows": prior,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    (out / "tables.md").write_text(tables, encoding="utf-8")
    return summary


def _modes(text: str) -> tuple[str, ...]:
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    if not modes or any(m not in ("generate", "logprob") for m in modes):
        raise argparse.ArgumentTypeError(f"expected generate and/or logprob, got {text!r}")
    return modes


CONTROLS = ("letter", "prior")


def _controls(text: str) -> tuple[str, ...]:
    chosen = tuple(c.strip() for c in text.split(",") if c.strip())
    if not chosen or any(c not in CONTROLS for c in chosen):
        raise argparse.ArgumentTypeError(f"expected letter and/or prior, got {text!r}")
    return chosen


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
        epilog="example: python bench/confound_controls.py --out runs/confound-controls",
    )
    parser.add_argument(
        "--out", required=True, type=Path, help="folder for releases, runs, summary.json, tables.md"
    )
    parser.add_argument(
        "--n", type=int, default=450, help="items per test release (default 450: 50 per type)"
    )
    parser.add_argument("--seed", type=int, default=EVAL_SEED, help="seed of the synthetic test releases")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument(
        "--modes", type=_modes, default=("generate", "logprob"), help="answer modes (default both)"
    )
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--letter-bias-model", type=Path, default=LETTER_MODEL)
    parser.add_argument("--text-prior-model", type=Path, default=PRIOR_MODEL)
    parser.add_argument("--balanced-model", type=Path, default=BALANCED_MODEL)
    parser.add_argument(
        "--controls",
        type=_controls,
        default=CONTROLS,
        help="which controls to run: letter (letter-bias model), prior (text-prior model); default both",
    )
    parser.add_argument(
        "--scorer",
        choices=("plain", "fast"),
        default="plain",
        help="eval's continuation scorer (default plain; fast shares the prompt prefix, same scores)",
    )
    parser.add_argument("--blind-image", default=None, help="passed to eval's --blind-image (e.g. grey)")
    parser.add_argument(
        "--accuracy-only",
        action="store_true",
        help="only --metrics accuracy (before the circular and blind views exist): vanilla accuracy, "
        "published-order letter shares, grey-image accuracy per type",
    )
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error(f"--n must be positive, got {args.n}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    models = {"balanced": args.balanced_model}
    if "letter" in args.controls:
        models["letter-bias"] = args.letter_bias_model
    if "prior" in args.controls:
        models["text-prior"] = args.text_prior_model
    options: dict[str, Any] = {"batch_size": args.batch_size, "scorer": args.scorer}
    if args.blind_image is not None:
        options["blind_image"] = args.blind_image
    summary = replace_folder(args.out, lambda folder: run_all(models, folder, args=args, options=options))
    types = summary["planted"]["text_prior_types"] or ()
    print(render_tables(summary["letter_rows"], summary["prior_rows"], types), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
