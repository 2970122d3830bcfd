"""Positive controls for the interventions view: do the counterfactual gaps and a targeted image
intervention expose a spurious cue we planted on purpose, and stay quiet where none was planted?

Three tiny LLaVA models trained with the same budget (``mmspubench.eval.tiny.train``: 4,000 items,
2,000 steps, seed 0):

- ``biased`` (``eval/assets/tiny-llava-biased``): every type's planted value is the class's home
  value in 95% of the training items;
- ``color-cue`` (``eval/assets/tiny-llava-color-cue``): the same, on colorization (Col.) only
  (``--correlated-types colorization``), the other types' values drawn uniformly;
- ``balanced`` (``eval/assets/tiny-llava-balanced``): no correlation.

Each is evaluated with ``mmspubench eval --metrics accuracy,interventions``
(``mmspubench.eval.api.evaluate``) on two benchmark-mode releases (cue broken on every item):

- ``cf``: the synthetic twin with exact counterfactuals (``synth --counterfactuals``, seed 0, the
  bundled default seed; ``--n`` items at ``--image-size`` px), interventions ``cf:*`` and
  ``grayscale``. Printed: per type the counterfactual gaps ``cue-aligned minus cue-broken`` and
  ``cue-removed minus cue-broken`` (results.json ``interventions.counterfactual_gaps``);
- ``default``: the bundled default release (90 items, 224 px), intervention ``grayscale``.

For grayscale, per model: the gain on Col. items and on the others (``change.by_type``), the
targeted contrast (Col. gain minus the others' gain, results.json ``targeted_contrast``) and, from
samples.jsonl, each model's contrast minus the balanced twin's with a bootstrap interval over
items (grayscale also removes the object's own colour, a core feature, so even a model without
the cue has a contrast: the twin's is the baseline).

Run folders go to ``OUT/runs/<model>-<release>-<mode>/``, the tables to ``OUT/tables.md`` and their
inputs to ``OUT/summary.json``.

    python bench/intervention_controls.py --out runs/intervention-controls
    python bench/intervention_controls.py --out runs/intervention-controls --modes logprob
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from mmspubench.dataset_builder.folders import replace_folder
from mmspubench.dataset_builder.schema import SPURIOUS_TYPES, TYPE_ABBREV
from mmspubench.dataset_builder.synth.vocab import CLASSES
from mmspubench.eval.bundled import ASSETS, BALANCED_MODEL, BIASED_MODEL

COLOR_CUE_MODEL = ASSETS / "tiny-llava-color-cue"
CF_SEED = 0
"""Seed of the counterfactual release: the bundled default release's seed. Benchmark mode draws
other scenes than the training mode of the same seed (no scene of the 450 equals a training one)."""
ABBREVS = tuple(t.abbrev for t in SPURIOUS_TYPES)
TARGET = "Col."
"""The type grayscale targets (removes the tint of)."""
GAPS = ("aligned_minus_broken", "removed_minus_broken")
MISSING = "n/a"
BOOTSTRAP = 2000
"""Resamples of the contrast difference's interval."""


# ---------------------------------------------------------------- releases and runs


def write_releases(out: Path, *, n: int, image_size: int) -> dict[str, Path]:
    """The counterfactual release (written under ``out``) and the bundled default release, by name."""
    from mmspubench.dataset_builder.defaults import default_dataset_dir
    from mmspubench.dataset_builder.synth.generate import generate_items, write_release

    items = generate_items(n, seed=CF_SEED, image_size=image_size, mode="benchmark")
    return {"cf": write_release(out / "cf", items, counterfactuals=True), "default": default_dataset_dir()}


INTERVENTIONS = {"cf": ("cf:*", "grayscale"), "default": ("grayscale",)}
"""The interventions run on each release."""


def evaluate(
    model: Path, dataset: Path, out: Path, interventions: Sequence[str], mode: str, batch_size: int
) -> dict[str, Any]:
    """One ``mmspubench eval --metrics accuracy,interventions`` run (in process); its results.json."""
    from mmspubench.eval.api import evaluate as run_eval

    results = run_eval(
        str(model),
        str(dataset),
        str(out),
        metrics=("accuracy", "interventions"),
        interventions=tuple(interventions),
        answer_mode=mode,
        batch_size=batch_size,
        progress=False,
    )
    assert results is not None  # a single process is always the main one
    return results


def read_samples(run_dir: Path) -> list[dict[str, Any]]:
    """The records of a run folder's samples.jsonl."""
    text = (run_dir / "samples.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# ---------------------------------------------------------------- rows from results


def gap_rows(run: Mapping[str, Any], results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per type (and ``all``) the two counterfactual gaps of one run, with intervals and n."""
    gaps = results["interventions"]["counterfactual_gaps"]
    # The gaps pair each item's counterfactuals with its published (cue-broken) image: vanilla's n.
    n_by_type = results["accuracy"]["n_by_type"]
    rows = [{**run, "type": "all", "n": results["accuracy"]["n"], **{g: _overall(gaps[g]) for g in GAPS}}]
    for abbrev in ABBREVS:
        rows.append(
            {
                **run,
                "type": abbrev,
                "n": n_by_type.get(abbrev, 0),
                **{g: _typed(gaps[g], abbrev) for g in GAPS},
            }
        )
    return rows


def _overall(change: Mapping[str, Any]) -> dict[str, Any]:
    return {"value": change["gain"], "ci95": change["ci95"], "mcnemar_p": change["mcnemar_p"]}


def _typed(change: Mapping[str, Any], abbrev: str) -> dict[str, Any]:
    return {"value": change["by_type"].get(abbrev), "ci95": change["ci95_by_type"].get(abbrev)}


def grayscale_row(run: Mapping[str, Any], results: Mapping[str, Any]) -> dict[str, Any]:
    """The grayscale figures of one run: gains on Col. and elsewhere, the targeted contrast."""
    view = results["interventions"]["by_intervention"]["grayscale"]
    change, contrast = view["change"], view["targeted_contrast"] or {}
    return {
        **run,
        "n": view["n"],
        "targets": view["targets"],
        "vanilla": results["accuracy"]["overall"],
        "gain": change["gain"],
        "gain_ci95": change["ci95"],
        "gain_target": contrast.get("targeted_change"),
        "gain_target_ci95": change["ci95_by_type"].get(TARGET),
        "gain_other": contrast.get("other_change"),
        "n_target": contrast.get("n_targeted", 0),
        "n_other": contrast.get("n_other", 0),
        "targeted_contrast": view["targeted_contrast"],
        "gold_prob_change": view["gold_prob_change"],
        "flip_rate": view["flip_rate"],
    }


def paired_outcomes(
    samples: Sequence[Mapping[str, Any]], name: str, targets: Sequence[str]
) -> list[tuple[bool, bool, bool]]:
    """(has a type among ``targets`` (abbreviations), vanilla correct, intervened correct) of every
    sample, in order."""
    out = []
    for s in samples:
        entry = _entry(s, name)
        targeted = any(TYPE_ABBREV[t] in targets for t in s["types"])
        out.append((targeted, bool(s["correct"]), bool(entry["correct"])))
    return out


def contrast_difference(
    pairs: Sequence[tuple[bool, bool, bool]], twin: Sequence[tuple[bool, bool, bool]], seed: int = 0
) -> dict[str, Any]:
    """(model's contrast) minus (twin's contrast) on the same items, in points, with a bootstrap 95%
    interval that resamples items within Col. and within the others (both models' outcomes together)."""
    if len(pairs) != len(twin) or any(a[0] != b[0] for a, b in zip(pairs, twin, strict=True)):
        raise ValueError("the two runs' samples are not the same items in the same order")
    delta = np.array(
        [int(a[2]) - int(a[1]) - (int(b[2]) - int(b[1])) for a, b in zip(pairs, twin, strict=True)]
    )
    inside = delta[[p[0] for p in pairs]]
    outside = delta[[not p[0] for p in pairs]]
    if not len(inside) or not len(outside):
        return {"value": None, "ci95": None}
    rng = np.random.default_rng(seed)
    draws = rng.choice(inside, (BOOTSTRAP, len(inside))).mean(1) - rng.choice(
        outside, (BOOTSTRAP, len(outside))
    ).mean(1)
    low, high = np.percentile(draws, [2.5, 97.5])
    return {
        "value": 100.0 * float(inside.mean() - outside.mean()),
        "ci95": [100.0 * float(low), 100.0 * float(high)],
    }


def cue_answers(
    run: Mapping[str, Any], samples: Sequence[Mapping[str, Any]], items: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Why grayscale is a weak probe of the colour cue: per group (Col. items, the others), the
    percent of answers naming the decoy class (whose home values were planted) and naming the
    class whose home tint is ``gray`` (what a grayscale picture looks like), without and with
    grayscale. ``items``: the release's ``SynthItem``s by id (their decoy is not in the records)."""
    gray_home = next(c.name for c in CLASSES if c.home_key("colorization") == "gray")
    rows = []
    for group in (TARGET, "other"):
        chosen = [s for s in samples if ("colorization" in s["types"]) == (group == TARGET)]
        after = [_entry(s, "grayscale")["raw_output"] for s in chosen]
        before = [s["raw_output"] for s in chosen]

        def share(outputs: Sequence[str | None], names: Sequence[str | None]) -> float:
            hits = sum(o is not None and o.strip() == n for o, n in zip(outputs, names, strict=True))
            return 100.0 * hits / len(outputs) if outputs else 0.0

        decoys = [items[s["id"]].decoy for s in chosen]
        rows.append(
            {
                **run,
                "group": group,
                "n": len(chosen),
                "gray_home": gray_home,
                "decoy": [share(before, decoys), share(after, decoys)],
                "gray_class": [
                    share(before, [gray_home] * len(chosen)),
                    share(after, [gray_home] * len(chosen)),
                ],
            }
        )
    return rows


def _entry(sample: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    entry = next((e for e in sample["interventions"] if e["name"] == name), None)
    if entry is None:
        raise ValueError(f"sample {sample.get('id')!r}: no intervention {name!r} in its interventions")
    return entry


# ---------------------------------------------------------------- tables


def _pp(value: float | None, ci: Sequence[float] | None = None) -> str:
    if value is None:
        return MISSING
    return f"{value:+.1f}" if ci is None else f"{value:+.1f} [{ci[0]:+.1f}, {ci[1]:+.1f}]"


def _prob(change: Mapping[str, Any] | None) -> str:
    """results.json ``gold_prob_change`` (logprob mode only): mean change of the gold option's
    probability (0-1 scale) [95% CI]."""
    if change is None:
        return MISSING
    low, high = change["ci95"]
    return f"{change['mean']:+.4f} [{low:+.4f}, {high:+.4f}]"


def gap_table(rows: Sequence[Mapping[str, Any]], mode: str) -> str:
    """Counterfactual gaps per (model, type) in one answer mode, percentage points [95% CI]."""
    lines = [
        f"Counterfactual gaps, `{mode}` mode (accuracy on the counterfactual minus on the published "
        "cue-broken image, points [paired bootstrap 95% CI]):",
        "",
        "| model | type | n | cue-aligned - cue-broken | cue-removed - cue-broken |",
        "|---|---|---:|---|---|",
    ]
    for r in rows:
        if r["mode"] != mode:
            continue
        cells = " | ".join(_pp(r[g]["value"], r[g]["ci95"]) for g in GAPS)
        lines.append(f"| {r['model']} | {r['type']} | {r['n']} | {cells} |")
    return "\n".join(lines)


def grayscale_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Grayscale: the gain on Col. items and elsewhere, the targeted contrast, and the contrast
    minus the balanced twin's, per (model, release, mode)."""
    lines = [
        "Grayscale (accuracy with the grayscale image minus with the published one, points; "
        "contrast = Col. gain minus the other items' gain; gold p change: mean change of the "
        "gold option's probability, logprob mode only):",
        "",
        "| model | release | answer mode | n | vanilla % | gain all [95% CI] | n Col. | gain Col. [95% CI] "
        "| n other | gain other | contrast [95% CI] | contrast - balanced's [95% CI] | gold p change [95% CI] |",
        "|---|---|---|---:|---:|---|---:|---|---:|---:|---|---|---|",
    ]
    for r in rows:
        contrast = r["targeted_contrast"] or {"value": None, "ci95": None}
        versus = r.get("versus_balanced") or {"value": None, "ci95": None}
        lines.append(
            f"| {r['model']} | {r['release']} | {r['mode']} | {r['n']} | {r['vanilla']:.1f} | "
            f"{_pp(r['gain'], r['gain_ci95'])} | {r['n_target']} | "
            f"{_pp(r['gain_target'], r['gain_target_ci95'])} | {r['n_other']} | {_pp(r['gain_other'])} | "
            f"{_pp(contrast['value'], contrast['ci95'])} | {_pp(versus['value'], versus['ci95'])} | "
            f"{_prob(r['gold_prob_change'])} |"
        )
    return "\n".join(lines)


def cue_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Answers naming the decoy class and the gray tint's home class, without -> with grayscale."""
    home = rows[0]["gray_home"] if rows else MISSING
    lines = [
        "Answers naming the decoy class (whose home values were planted) and naming the "
        f"{home} (the home class of the gray tint), published image -> grayscale, % of the group's items:",
        "",
        "| model | release | answer mode | items | n | decoy % | gray's home class % |",
        "|---|---|---|---|---:|---|---|",
    ]
    for r in rows:
        decoy, gray = r["decoy"], r["gray_class"]
        lines.append(
            f"| {r['model']} | {r['release']} | {r['mode']} | {r['group']} | {r['n']} | "
            f"{decoy[0]:.1f} -> {decoy[1]:.1f} | {gray[0]:.1f} -> {gray[1]:.1f} |"
        )
    return "\n".join(lines)


def render_tables(
    gaps: Sequence[Mapping[str, Any]],
    gray: Sequence[Mapping[str, Any]],
    cues: Sequence[Mapping[str, Any]] = (),
) -> str:
    """Every table of the controls that ran."""
    modes = list(dict.fromkeys(r["mode"] for r in gaps))
    tables = [gap_table(gaps, m) for m in modes] + ([grayscale_table(gray)] if gray else [])
    tables += [cue_table(cues)] if cues else []
    return "".join(f"{t}\n\n" for t in tables)


# ---------------------------------------------------------------- running


def run_all(models: Mapping[str, Path], out: Path, *, args: argparse.Namespace) -> dict[str, Any]:
    """Every model on every release in every answer mode; writes runs/, summary.json, tables.md."""
    from mmspubench.dataset_builder.synth.generate import generate_items

    releases = write_releases(out / "releases", n=args.n, image_size=args.image_size)
    # The cf release's items again (the generator is deterministic): their decoy class.
    items = {
        i.id: i for i in generate_items(args.n, seed=CF_SEED, image_size=args.image_size, mode="benchmark")
    }
    cues: list[dict[str, Any]] = []
    gaps: list[dict[str, Any]] = []
    gray: list[dict[str, Any]] = []
    pairs: dict[tuple[str, str, str], list[tuple[bool, bool, bool]]] = {}
    total, begun = len(releases) * len(args.modes) * len(models), time.perf_counter()
    for release, dataset in releases.items():
        for mode in args.modes:
            for model, folder in models.items():
                run_dir = out / "runs" / f"{model}-{release}-{mode}"
                run = {"model": model, "release": release, "mode": mode}
                step = len(gray) + 1
                print(f"[{step}/{total}] {model} on {release} ({mode}): running", file=sys.stderr, flush=True)
                started = time.perf_counter()
                results = evaluate(folder, dataset, run_dir, INTERVENTIONS[release], mode, args.batch_size)
                samples = read_samples(run_dir)
                if release == "cf":
                    gaps += gap_rows(run, results)
                if release == "cf" and mode == "generate":
                    # Read from the answer as written: a logprob run's raw output is no class name.
                    cues += cue_answers(run, samples, items)
                gray.append(grayscale_row(run, results))
                targets = results["interventions"]["by_intervention"]["grayscale"]["targets"]
                pairs[(model, release, mode)] = paired_outcomes(samples, "grayscale", targets)
                print(
                    f"[{step}/{total}] {model} on {release} ({mode}): accuracy "
                    f"{results['accuracy']['overall']:.1f}% ({time.perf_counter() - started:.0f} s; "
                    f"{time.perf_counter() - begun:.0f} s so far)",
                    file=sys.stderr,
                    flush=True,
                )
    for row in gray:
        twin = pairs.get(("balanced", row["release"], row["mode"]))
        if twin is not None and row["model"] != "balanced":
            row["versus_balanced"] = contrast_difference(
                pairs[(row["model"], row["release"], row["mode"])], twin
            )
    summary = {
        "n": args.n,
        "seed": CF_SEED,
        "image_size": args.image_size,
        "gap_rows": gaps,
        "grayscale_rows": gray,
        "cue_rows": cues,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    (out / "tables.md").write_text(render_tables(gaps, gray, cues), encoding="utf-8")
    return summary


def _modes(text: str) -> tuple[str, ...]:
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    if not modes or any(m not in ("generate", "logprob") for m in modes):
        raise argparse.ArgumentTypeError(f"expected generate and/or logprob, got {text!r}")
    return modes


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
        epilog="example: python bench/intervention_controls.py --out runs/intervention-controls",
    )
    parser.add_argument(
        "--out", required=True, type=Path, help="folder for releases, runs, summary.json, tables.md"
    )
    parser.add_argument(
        "--n", type=int, default=450, help="items of the counterfactual release (default 450)"
    )
    parser.add_argument(
        "--image-size", type=int, default=64, help="side of its images (default 64, the models')"
    )
    parser.add_argument(
        "--modes", type=_modes, default=("generate", "logprob"), help="answer modes (default both)"
    )
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--biased-model", type=Path, default=BIASED_MODEL)
    parser.add_argument("--color-cue-model", type=Path, default=COLOR_CUE_MODEL)
    parser.add_argument("--balanced-model", type=Path, default=BALANCED_MODEL)
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error(f"--n must be positive, got {args.n}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    models = {"biased": args.biased_model, "color-cue": args.color_cue_model, "balanced": args.balanced_model}
    summary = replace_folder(args.out, lambda folder: run_all(models, folder, args=args))
    print(render_tables(summary["gap_rows"], summary["grayscale_rows"], summary["cue_rows"]), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
