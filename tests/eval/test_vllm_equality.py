"""vLLM equals transformers, for real, on this CPU machine (slow; needs MMSPUBENCH_VLLM_PYTHON).

Inside the vLLM environment (its transformers and image processor for both sides), on the trained
tiny LLaVA in float32: per-condition CGLs within 1e-4 and equal greedy predictions, for the offline
engine (``--backend vllm``) and through a real vLLM OpenAI-compatible server started here
(``--backend openai``); the option letters' scores of ``logprob`` mode too. The offline engine reads
its prefix cache (blocks of 32 tokens, so that the tiny model's prompts span several), including
requests whose cache read covers scored positions (rescored without the cache), and on the
LLaVA-1.5 token profile (576 image tokens: a shared prefix of many blocks). Also: the fast scorer's
tests pass on the lowest transformers the pins allow (the vLLM environment's).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mmspubench.eval.bundled import bundled_model_dir

from tests.eval.vllm_support import vllm_env, vllm_python, vllm_ready_copy
from tests.helpers.shared_runs import shared_folder

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
LIMIT = "40"
TOLERANCE = 1e-4
SMALL_BLOCKS = '{"block_size": 32}'
"""vLLM's CPU backend caches whole blocks (128 tokens by default, longer than the tiny prompts)."""


def _driver(
    backend: str, scorer: str, model: Path, out: Path, jobs: list[dict[str, Any]], engine_args: str = "{}"
) -> None:
    """``jobs`` by one model load in the vLLM environment (tests/eval/vllm_driver.py): each writes
    OUT/NAME/generate and OUT/NAME/logprob."""
    cmd = [vllm_python(), str(ROOT / "tests/eval/vllm_driver.py"), backend, scorer, str(model), str(out),
           LIMIT, engine_args, json.dumps(jobs)]  # fmt: skip
    subprocess.run(cmd, env=vllm_env(), check=True, timeout=1800, cwd=out.parent)


def _samples(run: Path) -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in map(json.loads, (run / "samples.jsonl").read_text().splitlines())}


def compare(got: Path, want: Path) -> float:
    """Max |CGL or option-score difference| between two run folders; predictions must be equal."""
    worst = 0.0
    for mode in ("generate", "logprob"):
        a, b = _samples(got / mode), _samples(want / mode)
        assert a.keys() == b.keys() and len(a) == int(LIMIT)
        for key in a:
            assert a[key]["prediction"] == b[key]["prediction"], (mode, key)
            if mode == "generate":
                pairs = [
                    (x["cgl"], y["cgl"])
                    for x, y in zip(a[key]["conditions"], b[key]["conditions"], strict=True)
                ]
            else:
                pairs = list(zip(a[key]["option_scores"], b[key]["option_scores"], strict=True))
            assert pairs
            worst = max(worst, *(abs(x - y) for x, y in pairs))
    return worst


@pytest.fixture(scope="session")
def vllm_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return vllm_ready_copy(bundled_model_dir(), tmp_path_factory.mktemp("model") / "tiny-llava-vllm")


VIEWS = "circular,blind"
BLOCK = 32
JOBS = [
    {"name": "views", "views": VIEWS},
    {"name": "plain", "views": ""},
    {"name": "interventions", "views": "interventions"},
]
"""The three sets of views the offline engine and the server are compared on (vllm_driver.py's
jobs); the confound views first, while the engine's cache counts are still those of its own calls.
The tests that read them are one xdist group, but pytest-xdist 3.8's ``--dist loadgroup`` may still
hand a group's tests to both workers (a CI log showed it, and so does a test file of three grouped
tests): their runs are made once per session for every worker (tests/helpers/shared_runs.py), the
other worker waiting for them instead of making them again."""


@pytest.fixture(scope="session")
def references(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """transformers runs (fast scorer) inside the vLLM environment, on the original folder, one
    model load for the three jobs: /plain (CGLA), /views (circular and blind), and /interventions
    (every built-in intervention, CGLA under each in generate mode)."""

    def build(folder: Path) -> None:
        _driver("transformers", "fast", bundled_model_dir(), folder / "transformers", JOBS)

    return shared_folder(tmp_path_factory, "vllm-references", build) / "transformers"


@pytest.fixture(scope="session")
def offline(vllm_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The offline engine's runs of the three jobs, one engine for all (its prefix cache in blocks
    of 32 tokens), then a job under a stand-in regression of its cache reads (/wrong-cache)."""
    wrong = {"name": "wrong-cache", "views": "", "limit": 3, "cache_offset": 0.01}

    def build(folder: Path) -> None:
        _driver("vllm", "fast", vllm_model, folder / "vllm", [*JOBS, wrong], SMALL_BLOCKS)

    return shared_folder(tmp_path_factory, "vllm-offline", build) / "vllm"


@pytest.mark.xdist_group("vllm")
def test_offline_engine_equals_transformers(references: Path, offline: Path, tmp_path: Path) -> None:
    out = offline / "plain"
    worst = compare(out, references / "plain")
    print(f"offline: max |vLLM - transformers| = {worst:.3g} over {LIMIT} items")
    assert worst <= TOLERANCE
    backend = json.loads((out / "generate" / "results.json").read_text())["backend"]
    assert backend["name"] == "vllm" and backend["settings"]["dtype"] == "float32"
    cache = backend["prefix_cache"]
    print(f"offline: prefix cache {cache}")
    assert cache["read"] and backend["settings"]["enable_prefix_caching"] is True
    assert cache["cached_prompt_tokens"] > 0 and cache["computed_prompt_tokens"] > 0
    assert cache["requests"] > 0 and 0 <= cache["rescored_share"] <= 1
    plain = tmp_path / "plain"  # and the plain transformers scorer, for good measure
    _driver("transformers", "plain", bundled_model_dir(), plain, JOBS[1:2])
    assert compare(out, plain / "plain") <= TOLERANCE
    # The run checked its cache reads against a fresh computation on its first item, and says so.
    model = json.loads((out / "generate" / "results.json").read_text())["model"]
    check = model["scorer_check"]
    assert check["path"] == "vLLM's prefix-cache scoring" and check["items"] == 1
    assert check["conditions"] > 0 and check["max_abs_diff"] <= TOLERANCE


@pytest.mark.xdist_group("vllm")
def test_a_wrong_cache_read_stops_the_offline_engine(offline: Path) -> None:
    """A stand-in regression (scores read through the cache off by 0.01) stops the run on its
    first item, naming the fast path and the option that turns it off; nothing is written."""
    refusal = (offline / "wrong-cache" / "error.txt").read_text()
    assert "vLLM's prefix-cache scoring disagrees with the plain computation" in refusal
    assert "item '000000'" in refusal and "enable_prefix_caching" in refusal
    assert not (offline / "wrong-cache" / "generate" / "samples.jsonl").exists()


def compare_views(got: Path, want: Path) -> float:
    """Max |option-score difference| over every answer (published, rotations 1-3, blind) of two
    circular+blind run folders; every answer's prediction and the view sections must be equal."""
    worst = 0.0
    for mode in ("generate", "logprob"):
        a, b = _samples(got / mode), _samples(want / mode)
        assert a.keys() == b.keys() and len(a) == int(LIMIT)
        for key in a:
            x, y = a[key], b[key]
            assert len(x["rotations"]) == len(y["rotations"]) == 4 and x["blind"] and y["blind"]
            for p, q in zip([x, *x["rotations"], x["blind"]], [y, *y["rotations"], y["blind"]], strict=True):
                assert p["prediction"] == q["prediction"], (mode, key)
                if mode == "logprob":
                    pairs = list(zip(p["option_scores"], q["option_scores"], strict=True))
                    worst = max(worst, *(abs(s - t) for s, t in pairs))
        found, wanted = (json.loads((run / mode / "results.json").read_text()) for run in (got, want))
        for view in ("accuracy", "circular", "blind"):
            assert found[view] == wanted[view], (mode, view)
    return worst


def _lcp(a: list[int], b: list[int]) -> int:
    return next((i for i, (s, t) in enumerate(zip(a, b, strict=False)) if s != t), min(len(a), len(b)))


@pytest.mark.xdist_group("vllm")
def test_offline_circular_and_blind_equal_transformers(references: Path, offline: Path) -> None:
    """Every rotation and the text-only blind answer as transformers gives them; in logprob mode
    rotations 1-3 read the image and question the item's first request left in the prefix cache,
    the blind letters read their question's, and backend.prefix_cache counts exactly those reads."""
    out = offline / "views"
    worst = compare_views(out, references / "views")
    print(f"offline views: max |vLLM - transformers| = {worst:.3g} over {LIMIT} items x 5 asks")
    assert worst <= TOLERANCE
    (calls,) = json.loads((out / "cache_reads-logprob.json").read_text())  # one chunk, one call
    n = int(LIMIT)
    assert len(calls) == 4 * 5 * n  # asks: published, rotations 1-3 of each item, blind; 4 letters

    def request(ask: int, letter: int) -> dict[str, Any]:
        return calls[4 * ask + letter]

    rotation_reads, blind_reads = [], []
    for item in range(n):
        warm = request(item, 0)  # the item's first request: its group's first wave
        assert warm["image"]
        for k in (1, 2, 3):
            for letter in range(4):
                entry = request(n + 3 * item + k - 1, letter)
                shared = _lcp(entry["ran"], warm["ran"])
                assert entry["image"] and entry["cached"] >= BLOCK * (shared // BLOCK) > 0, (item, k, letter)
                rotation_reads.append(entry["cached"])
        first = request(4 * n + item, 0)
        assert not first["image"]
        for letter in (1, 2, 3):
            entry = request(4 * n + item, letter)
            shared = _lcp(entry["ran"], first["ran"])  # the context: all but the letter's token
            assert not entry["image"] and shared == len(entry["ran"]) - 1
            assert entry["cached"] >= BLOCK * (shared // BLOCK) > 0, (item, letter)
            blind_reads.append(entry["cached"])
    cache = json.loads((out / "logprob" / "results.json").read_text())["backend"]["prefix_cache"]
    print(
        f"offline views: rotations 1-3 read {sum(rotation_reads)} cached prompt tokens "
        f"(min {min(rotation_reads)} per request), blind letters {sum(blind_reads)}; {cache}"
    )
    assert cache["requests"] == len(calls)
    assert cache["cached_prompt_tokens"] == sum(c["cached"] for c in calls)


SECTION_FIGURES = ("names", "targets", "n", "accuracy", "change", "flip_rate", "flip_rate_by_type")
"""The interventions section's figures computed from predictions alone (equal, not close)."""


def compare_interventions(got: Path, want: Path) -> tuple[float, int]:
    """(max |score difference| over every intervened answer's option scores and CGLs, the number
    of intervened answers whose scores differ from the published image's by more than 100 x
    TOLERANCE); names, digests and predictions equal, and the section's figures."""
    worst, moved = 0.0, 0
    for mode in ("generate", "logprob"):
        a, b = _samples(got / mode), _samples(want / mode)
        assert a.keys() == b.keys() and len(a) == int(LIMIT)
        for key in a:
            x, y = a[key], b[key]
            assert x["prediction"] == y["prediction"], (mode, key)
            assert [(e["name"], e["digest"]) for e in x["interventions"]] == [
                (e["name"], e["digest"]) for e in y["interventions"]
            ]
            for p, q in zip(x["interventions"], y["interventions"], strict=True):
                assert p["prediction"] == q["prediction"], (mode, key, p["name"])
                field, published = (
                    ("option_scores", x["option_scores"])
                    if mode == "logprob"
                    else ("cgls", [c["cgl"] for c in x["conditions"]])
                )
                pairs = list(zip(p[field], q[field], strict=True))
                assert pairs
                worst = max(worst, *(abs(s - t) for s, t in pairs))
                moved += max(abs(s - t) for s, t in zip(p[field], published, strict=True)) > 100 * TOLERANCE
        found, wanted = (json.loads((run / mode / "results.json").read_text()) for run in (got, want))
        assert found["accuracy"] == wanted["accuracy"]
        assert found["interventions"]["names"] == wanted["interventions"]["names"]
        for name, section in wanted["interventions"]["by_intervention"].items():
            mine = found["interventions"]["by_intervention"][name]
            for figure in SECTION_FIGURES:
                assert mine.get(figure) == section.get(figure), (mode, name, figure)
    return worst, moved


@pytest.mark.xdist_group("vllm")
def test_offline_interventions_equal_transformers(references: Path, offline: Path) -> None:
    """Every built-in intervention through the offline engine: the same answers, option scores and
    CGLs under each changed image as transformers gives, the same section figures. The intervened
    images' scores differ from the published image's (so an intervened request that read the
    published image's cache blocks or answers would show here), and the cache counts are the reads."""
    out = offline / "interventions"
    worst, moved = compare_interventions(out, references / "interventions")
    print(
        f"offline interventions: max |vLLM - transformers| = {worst:.3g}; {moved} answers moved by the image"
    )
    assert worst <= TOLERANCE
    assert moved >= int(LIMIT)  # far more than a few: the engine saw each changed image
    (calls,) = json.loads((out / "cache_reads-logprob.json").read_text())
    assert len(calls) == 4 * 5 * int(LIMIT)  # the published image and 4 interventions, 4 letters
    before, cache = (
        json.loads((out / mode / "results.json").read_text())["backend"]["prefix_cache"]
        for mode in ("generate", "logprob")
    )  # one engine for both runs: its counts add up, the generate run's CGLA first
    assert cache["requests"] - before["requests"] == len(calls)
    assert cache["cached_prompt_tokens"] - before["cached_prompt_tokens"] == sum(c["cached"] for c in calls)


@pytest.mark.xdist_group("vllm")
def test_server_interventions_equal_transformers(references: Path, vllm_server: str, tmp_path: Path) -> None:
    """Through a real vLLM server: each changed image goes out as its data URL and is answered
    and scored as transformers does."""
    out = tmp_path / "api"
    base = [sys.executable, "-m", "mmspubench.eval.cli", "eval", "--backend", "openai", "--base-url", vllm_server,
            "--model", "tiny-llava", "--limit", LIMIT, "--no-progress", "--api-key-env", "none"]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for mode, metrics in (("generate", "accuracy,cgla,interventions"), ("logprob", "accuracy,interventions")):
        cmd = [*base, "--out", str(out / mode), "--answer-mode", mode, "--metrics", metrics]
        subprocess.run(cmd, env=env, check=True, timeout=1200)
    worst, moved = compare_interventions(out, references / "interventions")
    print(f"server interventions: max |vLLM server - transformers| = {worst:.3g}; {moved} moved")
    assert worst <= TOLERANCE and moved >= int(LIMIT)


def _score_driver(model: Path, out: Path, items: int, engine_args: str) -> dict[str, Any]:
    cmd = [
        vllm_python(),
        str(ROOT / "tests/eval/vllm_score_driver.py"),
        str(model),
        str(out),
        str(items),
        engine_args,
    ]
    subprocess.run(cmd, env=vllm_env(), check=True, timeout=900, cwd=out.parent)
    found: dict[str, Any] = json.loads(out.read_text())
    return found


def _check_scores(found: dict[str, Any], what: str) -> None:
    """Conditions within TOLERANCE; the long made-up continuations (sums over up to ~200 tokens, in
    the thousands) within TOLERANCE plus float32's relative rounding of such a sum."""
    rows = list(zip(found["vllm"], found["plain"], found["long"], strict=True))
    worst = max(abs(a - b) for a, b, long in rows if not long)
    print(
        f"{what}: max |vLLM (cache read) - plain| = {worst:.3g} over the conditions; {found['prefix_cache']}"
    )
    assert worst <= TOLERANCE
    for a, b, long in rows:
        assert not long or abs(a - b) <= TOLERANCE + 1e-6 * abs(b), (a, b)


def test_rescored_requests_equal_the_plain_scorer(vllm_model: Path, tmp_path: Path) -> None:
    """Identical requests and one that is a prefix of another: the second call's cache reads cover
    scored positions; those requests are rescored without the cache, equal to the plain scorer."""
    found = _score_driver(vllm_model, tmp_path / "scores.json", 3, SMALL_BLOCKS)
    _check_scores(found, "rescoring")
    first, last = found["first_call"], found["prefix_cache"]
    assert first["cached_prompt_tokens"] > 0  # the conditions of an item read the first one's blocks
    assert last["rescored_requests"] > first["rescored_requests"]  # the rescoring path ran
    assert last["rescored_share"] == last["rescored_requests"] / last["requests"]


def test_llava_profile_with_many_cached_blocks_equals_plain(tmp_path: Path) -> None:
    """The LLaVA-1.5 token profile (576 image tokens, 32k vocabulary; random weights) at the
    backend's own CPU block size: each item's image and shared prompt span many blocks, read from
    the cache."""
    folder = tmp_path / "llava-profile"
    build = (
        "import sys; sys.path.insert(0, 'bench'); from pathlib import Path; import llava_profile as lp; "
        "from mmspubench.eval.backends.vllm.layout import to_vllm_layout; "
        f"to_vllm_layout(lp.save_llava(Path({str(folder)!r}), lp.CPU_REALISTIC))"
    )
    subprocess.run([vllm_python(), "-c", build], env=vllm_env(), check=True, timeout=600, cwd=ROOT)
    found = _score_driver(folder, tmp_path / "scores.json", 2, "{}")
    _check_scores(found, "llava profile")
    first = found["first_call"]
    assert first["cached_prompt_tokens"] >= 2 * 512  # at least 4 blocks of 128 per item read
    assert found["prefix_cache"]["rescored_requests"] > 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def vllm_server(vllm_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``vllm.entrypoints.openai.api_server`` on 127.0.0.1, stopped (by its pid) after the
    session: one start for the server tests a worker runs (a process, not shared between workers);
    each test's runs go to a folder of their own."""
    tmp_path = tmp_path_factory.mktemp("server")
    port = _free_port()
    cmd = [
        vllm_python(), "-m", "vllm.entrypoints.openai.api_server", "--model", str(vllm_model),
        "--served-model-name", "tiny-llava", "--dtype", "float32", "--enforce-eager", "--seed", "0",
        "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip
    log = (tmp_path / "server.log").open("wb")
    proc = subprocess.Popen(cmd, env=vllm_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 420
        while True:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the vLLM server did not come up in time"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                time.sleep(1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server's own process group: it and its engine
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


@pytest.mark.xdist_group("vllm")
def test_server_equals_transformers(references: Path, vllm_server: str, tmp_path: Path) -> None:
    out = tmp_path / "api"
    base = [sys.executable, "-m", "mmspubench.eval.cli", "eval", "--backend", "openai", "--base-url", vllm_server,
            "--model", "tiny-llava", "--limit", LIMIT, "--no-progress", "--api-key-env", "none"]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    subprocess.run([*base, "--out", str(out / "generate")], env=env, check=True, timeout=600)
    cmd = [*base, "--out", str(out / "logprob"), "--answer-mode", "logprob", "--metrics", "accuracy"]
    subprocess.run(cmd, env=env, check=True, timeout=600)
    worst = compare(out, references / "plain")
    print(f"server: max |vLLM server - transformers| = {worst:.3g} over {LIMIT} items")
    assert worst <= TOLERANCE
    backend = json.loads((out / "generate" / "results.json").read_text())["backend"]
    assert backend["settings"]["prompt_logprobs"] is True
    assert backend["settings"]["add_special_tokens"] is True  # the tiny LLaVA's template writes no BOS
    assert backend["usage"]["requests"] > 0 and backend["usage"]["prompt_tokens"] > 0
    # vLLM 0.32's server takes no skip_reading_prefix_cache (and reports no cached tokens unless
    # started with --enable-prompt-tokens-details): the probe finds it, nothing extra is sent
    assert backend["prefix_cache"]["read"] is False and backend["prefix_cache"]["requests"] > 0


@pytest.mark.xdist_group("vllm")
def test_server_circular_and_blind_equal_transformers(
    references: Path, vllm_server: str, tmp_path: Path
) -> None:
    """Through a real vLLM server: the blind requests carry no image part, and every answer
    (rotations, blind) equals transformers'."""
    out = tmp_path / "api"
    base = [sys.executable, "-m", "mmspubench.eval.cli", "eval", "--backend", "openai", "--base-url", vllm_server,
            "--model", "tiny-llava", "--limit", LIMIT, "--no-progress", "--api-key-env", "none",
            "--metrics", f"accuracy,{VIEWS}"]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for mode in ("generate", "logprob"):
        cmd = [*base, "--out", str(out / mode), "--answer-mode", mode]
        subprocess.run(cmd, env=env, check=True, timeout=900)
    worst = compare_views(out, references / "views")
    print(f"server views: max |vLLM server - transformers| = {worst:.3g} over {LIMIT} items x 5 asks")
    assert worst <= TOLERANCE


def test_fast_scorer_on_the_lowest_transformers(tmp_path: Path) -> None:
    """pyproject's lowest transformers is the vLLM environment's; the scorer tests pass there."""
    pin = re.search(r'"transformers>=([0-9.]+)[",]', (ROOT / "pyproject.toml").read_text())
    assert pin
    probe = [vllm_python(), "-c", "import transformers; print(transformers.__version__)"]
    version = subprocess.run(probe, env=vllm_env(), check=True, capture_output=True, text=True).stdout.strip()
    assert version.split(".")[:2] == pin.group(1).split(".")[:2], (version, pin.group(1))
    tests = [f"tests/eval/{name}" for name in ("test_fast_scoring.py", "test_scoring.py", "test_adapter.py")]
    cmd = [vllm_python(), "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
    subprocess.run(cmd, env=vllm_env(), check=True, timeout=1200, cwd=ROOT)
