"""Five reference runs and the commands' text, written to a folder, and two such folders compared.

A restructuring of the code must not change what a user sees. This script records it: the five
reference runs on the bundled model and release (the default run; accuracy,cgla,circular,blind,
interventions; the same with calibration in logprob mode; accuracy,calibration; accuracy,interventions
with noise,grayscale), each run's ``report``, ``report --plot`` PNG and ``compare`` of the first two,
every command's ``--help`` and a set of refusals (their stderr and exit code). ``--against`` compares
a recorded folder with another and prints each difference; the run stamp and the replies' ``seconds`` of a sample line, the
timing and creation time of results.json and the git commit and checkout state of its environment
are set aside (they differ between any two runs).

Examples:
  python bench/same_behaviour.py --out /tmp/before            # record (about 5 minutes on 2 cores)
  python bench/same_behaviour.py --out /tmp/after --against /tmp/before
  python bench/same_behaviour.py --out /tmp/after --against /tmp/before --compare-only
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

RUNS: dict[str, list[str]] = {
    "default": [],
    "confounds": ["--metrics", "accuracy,cgla,circular,blind,interventions"],
    "confounds-logprob": [
        "--metrics",
        "accuracy,cgla,circular,blind,calibration,interventions",
        "--answer-mode",
        "logprob",
    ],
    "calibration": ["--metrics", "accuracy,calibration", "--answer-mode", "logprob"],
    "interventions": ["--metrics", "accuracy,interventions", "--interventions", "noise,grayscale"],
}
"""The five reference runs: name -> ``mmspubench eval`` options."""
COMMANDS = (
    "build", "push", "synth", "eval", "report", "compare", "space", "submit", "curate", "ingest",
    "export", "integrations", "sweep",
)  # fmt: skip
"""Every command whose ``--help`` is recorded."""
REFUSALS: dict[str, list[str]] = {
    "metrics-unknown": ["eval", "--metrics", "accuracy,nope"],
    "metrics-needs-accuracy": ["eval", "--metrics", "circular"],
    "calibration-generate": ["eval", "--metrics", "accuracy,calibration"],
    "interventions-unknown": ["eval", "--metrics", "accuracy,interventions", "--interventions", "nope"],
    "interventions-empty": ["eval", "--metrics", "accuracy,interventions", "--interventions", ""],
    "limit-zero": ["eval", "--limit", "0"],
    "backend-unknown": ["eval", "--backend", "nope"],
    "report-missing": ["report", "/nonexistent/results.json"],
    "compare-missing": ["compare", "/nonexistent/a", "/nonexistent/b"],
    "submit-missing": ["submit", "/nonexistent/results.json", "--model-repo", "org/m", "--dry-run", "x"],
}
"""Refusals whose stderr and exit code are recorded (run in an empty folder)."""


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "100", "TQDM_DISABLE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mmspubench.cli", *args], cwd=cwd, env=env, capture_output=True, text=True
    )


def record(out: Path) -> None:
    """Run everything into ``out`` (which must not exist)."""
    out.mkdir(parents=True)
    (out / "work").mkdir()
    texts: dict[str, Any] = {}
    for name, options in RUNS.items():
        done = _cli(["eval", "--out", str(out / "runs" / name), *options], out / "work")
        if done.returncode != 0:
            raise SystemExit(f"run {name} failed ({done.returncode}):\n{done.stderr}")
        run = out / "runs" / name
        texts[f"report {name}"] = _cli(["report", str(run / "results.json")], out).stdout
        _cli(["report", str(run / "results.json"), "--plot", str(out / f"plot-{name}.png")], out)
    first, second = (str(out / "runs" / n) for n in list(RUNS)[:2])
    texts["compare"] = _cli(["compare", first, second, "--json", str(out / "compare.json")], out).stdout
    _cli(["compare", first, second, "--plot", str(out / "compare.png")], out)
    for command in COMMANDS:
        texts[f"help {command}"] = _cli([command, "--help"], out).stdout
    for name, args in REFUSALS.items():
        done = _cli(args, out / "work")
        texts[f"refusal {name}"] = {"rc": done.returncode, "stderr": done.stderr}
    texts["checkout"] = str(CHECKOUT)
    (out / "texts.json").write_text(json.dumps(texts, indent=1, sort_keys=True) + "\n")


CHECKOUT = Path(__file__).resolve().parents[1]
"""The checkout this script is in (whose code a recording runs): the bundled model's path is in it."""


def _checkout(folder: Path, texts: dict[str, Any]) -> str:
    """The checkout a recording ran from: recorded, or (an older recording) the bundled model's."""
    if "checkout" in texts:
        return str(texts.pop("checkout"))
    model = json.loads((folder / "runs" / "default" / "results.json").read_text())["model"]["path"]
    return str(model).split("/eval/assets/")[0]


def _results(path: Path, checkout: str, out: Path) -> dict[str, Any]:
    text = path.read_text().replace(checkout, "CHECKOUT").replace(str(out), "OUT")
    obj = json.loads(text)
    obj.pop("timing", None)
    obj.pop("created_at", None)
    obj.get("environment", {}).pop("git", None)
    return obj


def _samples(path: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        line.pop("run", None)
        for answer in [line, *(line.get("rotations") or []), *(line.get("interventions") or [])]:
            answer.pop("seconds", None)  # a reply's wall time
        if isinstance(line.get("blind"), dict):
            line["blind"].pop("seconds", None)
    return lines


def compare(old: Path, new: Path) -> list[str]:
    """Each difference between two recorded folders, one line each."""
    faults: list[str] = []
    before, after = (json.loads((d / "texts.json").read_text()) for d in (old, new))
    old_checkout, new_checkout = _checkout(old, before), _checkout(new, after)
    for name in RUNS:
        a, b = old / "runs" / name, new / "runs" / name
        if _results(a / "results.json", old_checkout, old) != _results(b / "results.json", new_checkout, new):
            faults.append(f"run {name}: results.json differs")
        if _samples(a / "samples.jsonl") != _samples(b / "samples.jsonl"):
            faults.append(f"run {name}: samples.jsonl differs")
        if (old / f"plot-{name}.png").read_bytes() != (new / f"plot-{name}.png").read_bytes():
            faults.append(f"report --plot {name}: the PNG differs")
    if (old / "compare.png").read_bytes() != (new / "compare.png").read_bytes():
        faults.append("compare.png differs")
    if _results(old / "compare.json", old_checkout, old) != _results(new / "compare.json", new_checkout, new):
        faults.append("compare.json differs")
    for key in sorted(set(before) | set(after)):
        if json.dumps(before.get(key)).replace(str(old), "OUT") != json.dumps(after.get(key)).replace(
            str(new), "OUT"
        ):
            faults.append(f"{key}: differs")
    return faults


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True, help="folder to record into (must not exist)")
    parser.add_argument("--against", type=Path, help="a folder recorded before: print what differs")
    parser.add_argument("--compare-only", action="store_true", help="--out is recorded already: only compare")
    args = parser.parse_args()
    if not args.compare_only:
        record(args.out)
    if args.against is None:
        print(f"recorded {len(RUNS)} runs and {len(COMMANDS)} help texts into {args.out}")
        return 0
    faults = compare(args.against, args.out)
    for fault in faults:
        print(fault)
    print(f"{len(RUNS)} runs, their reports, plots and compare, {len(COMMANDS)} help texts and "
          f"{len(REFUSALS)} refusals: {len(faults)} differences")  # fmt: skip
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
