"""A stand-in for the ``mmspubench eval`` process (fast tests of the launchers' scheduling).

It records its GPU (``CUDA_VISIBLE_DEVICES``) and its start and end, sleeps, then writes a folder
the sweep reads as finished, or fails like eval does (one error line, exit 2: bad input) when its
run folder's name contains ``$FAKE_EVAL_FAIL`` (``$FAKE_EVAL_FAIL_CODE``: another status, e.g. 1 as
a crash does; a negative one: killed by that signal). ``$FAKE_EVAL_LEAK`` is printed to stderr
(a careless model or server echoing a key), last on a failure.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def fake_finished(folder: Path) -> None:
    """As ``tests.sweep.sweep_files.fake_finished``, the config from ``$FAKE_EVAL_CONFIGS`` (this
    process imports nothing of the package: it starts light)."""
    configs = json.loads(Path(os.environ["FAKE_EVAL_CONFIGS"]).read_text(encoding="utf-8"))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text("{}", encoding="utf-8")
    (folder / "samples.jsonl").write_bytes(b"")
    results = {"benchmark": "MM-SpuBench", "dataset": {"n": 0, "split_n": 0}, "config": configs[folder.name]}
    (folder / "results.json").write_text(json.dumps(results), encoding="utf-8")


def main(argv: list[str]) -> int:
    out = Path(argv[argv.index("--out") + 1])
    started = time.time()
    time.sleep(float(os.environ.get("FAKE_EVAL_SECONDS", "0.4")))
    record = {
        "run": out.name,
        "gpu": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "start": started,
        "end": time.time(),
    }
    with (out.parent / "fake-eval.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
    leak = os.environ.get("FAKE_EVAL_LEAK")
    fail = os.environ.get("FAKE_EVAL_FAIL")
    if fail and fail in out.name:
        print(f"mmspubench eval: error: {out.name}: cannot load the model (fake)", file=sys.stderr)
        if leak:  # the last line: what the sweep takes as the run's error
            print(leak, file=sys.stderr, flush=True)
        code = int(os.environ.get("FAKE_EVAL_FAIL_CODE", "2"))
        if code < 0:  # killed by a signal (the out-of-memory killer, kill -9)
            os.kill(os.getpid(), -code)
        return code
    if leak:
        print(leak, file=sys.stderr, flush=True)
    fake_finished(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
