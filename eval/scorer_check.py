"""Every fast path proves itself on every run, and every sample records how it was scored.

A fast path computes the same scores as the plain computation in less time: the transformers fast
scorer reuses each image and shared prompt prefix (its exactness rests on how the installed
libraries compute attention), vLLM and a vLLM server read their prefix cache. Any release of a
library can break such a path without an error, so it is not trusted, it is checked:

- **The check.** The first ``--scorer-check K`` items a process evaluates (default
  :data:`DEFAULT_ITEMS`) are scored one at a time through the engine as usual, then every score
  the fast path gave them (each CGL condition, each option letter in ``logprob`` mode, every view's
  score) is computed again by the engine's reference computation (``reference_score``: the plain
  scorer, or the same requests without reading the cache). A difference above :data:`TOLERANCE`
  nats stops the run before the item is written, with one line naming the model's family, the
  item, the condition, both scores and the option that turns the fast path off. The run stops
  rather than going on with the plain scorer: a path that is wrong on the first items says the
  installed versions break it, and a researcher should know that before trusting any figure.
  Each checked sample records ``scoring.check`` (scores compared, largest difference); results.json
  sums them under ``model.scorer_check``.
- **The record.** Each sample records under ``scoring`` the scorers that scored its chunk's
  requests (``fast``, ``plain`` or both) and why any were scored plain although ``fast`` was asked
  for (a request longer than a sliding window, the blind view's text-only prompts, a family the fast
  path does not serve). results.json's ``model.scorer_used`` is then ``fast``, ``plain`` or ``mixed``,
  with the count of samples per scorer (``model.scorer_samples``) and the reasons, recomputed from
  the lines, so a resumed or multi-process run says what ran in all of its parts.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import prompts
from mmspubench.eval.protocol import ScoreRequest, ScorerTally
from mmspubench.eval.records import SampleResult, ScoreCheck, Scoring

if TYPE_CHECKING:
    from mmspubench.dataset_builder.schema import Item

__all__ = ["DEFAULT_ITEMS", "TOLERANCE", "ChunkScorer", "summary"]

DEFAULT_ITEMS = 1
"""Items each process checks by default (``--scorer-check``): on the 576-image-token profile the
plain scorer takes about five times the fast one, so one item costs about 4% of a 90-item run
(docs/benchmarks.md), two about 8%."""

TOLERANCE = 1e-4
"""Largest |fast - reference| score difference accepted, in nats (float32 sums of log-probabilities
of the same tokens agree to about 1e-5; a wrong mask or position moves them by 1e-2 and more)."""

Evaluate = Callable[[Any, Sequence["Item"]], list[SampleResult]]
"""``evaluate(model, items)``: the runner's scoring of a few items (``evaluate_items``)."""


class _Recording:
    """The model as the runner sees it, recording every ``score`` call the fast path answered."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self.calls: list[tuple[list[ScoreRequest], list[float]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        tally: ScorerTally | None = getattr(self._model, "scorer_tally", None)
        before = None if tally is None else tally.copy()
        scores = list(self._model.score(requests))
        fast = True if tally is None or before is None else tally.since(before).requests.get("fast", 0) > 0
        if fast:  # a call the engine scored plain (a sliding window) has nothing to check
            self.calls.append((list(requests), scores))
        return scores


class ChunkScorer:
    """Scores chunks for the runner: the first items checked, every sample's ``scoring`` recorded."""

    def __init__(self, model: Any, check_items: int) -> None:
        self._model = model
        self._path = getattr(model, "fast_path", None)
        self._left = check_items if self._path is not None else 0
        self.check_seconds = 0.0
        """Seconds spent in the reference computations."""

    def run(self, items: Sequence[Item], evaluate: Evaluate) -> Iterator[SampleResult]:
        """``evaluate`` the chunk's items: the first ones still to check one at a time (each
        yielded once checked, so it is written before the next is scored), the rest together;
        each sample with its ``scoring``."""
        head, rest = list(items[: self._left]), list(items[self._left :])
        self._left -= len(head)
        for item in head:
            yield self._checked(item, evaluate)
        if rest:
            before = self._tally_copy()
            samples = evaluate(self._model, rest)
            scoring = self._scoring(before, None)
            yield from (s if scoring is None else dataclasses.replace(s, scoring=scoring) for s in samples)

    def _tally_copy(self) -> ScorerTally | None:
        tally: ScorerTally | None = getattr(self._model, "scorer_tally", None)
        return None if tally is None else tally.copy()

    def _scoring(self, before: ScorerTally | None, check: ScoreCheck | None) -> Scoring | None:
        """The ``scoring`` record of what was scored since ``before`` (``None``: nothing to record)."""
        tally: ScorerTally | None = getattr(self._model, "scorer_tally", None)
        if tally is None or before is None:
            return None if check is None else Scoring(None, None, check)
        delta = tally.since(before)
        if not delta.requests:
            return None if check is None else Scoring(None, None, check)
        fallback = "; ".join(sorted(delta.reasons)) or None
        return Scoring(tuple(sorted(delta.requests)), fallback, check)

    def _checked(self, item: Item, evaluate: Evaluate) -> SampleResult:
        import time

        before = self._tally_copy()
        recording = _Recording(self._model)
        sample = evaluate(recording, [item])[0]
        requests = [r for call, _ in recording.calls for r in call]
        fast = [s for _, scores in recording.calls for s in scores]
        start = time.perf_counter()
        reference = list(self._model.reference_score(requests)) if requests else []
        self.check_seconds += time.perf_counter() - start
        if len(reference) != len(requests):
            raise MMSpuBenchError(
                f"the model's reference scoring returned {len(reference)} scores for {len(requests)} requests"
            )
        diffs = [
            abs(a - b) if math.isfinite(a - b) else math.inf for a, b in zip(fast, reference, strict=True)
        ]
        worst = max(range(len(diffs)), key=diffs.__getitem__, default=None)
        if worst is not None and diffs[worst] > TOLERANCE:
            raise MMSpuBenchError(
                self._failure(item, sample, requests[worst], fast[worst], reference[worst], diffs[worst])
            )
        check = ScoreCheck(scores=len(diffs), max_abs_diff=0.0 if worst is None else diffs[worst])
        scoring = self._scoring(before, check)
        return sample if scoring is None else dataclasses.replace(sample, scoring=scoring)

    def _failure(
        self, item: Item, sample: SampleResult, request: ScoreRequest, fast: float, plain: float, diff: float
    ) -> str:
        from mmspubench.eval.environment import library_versions

        assert self._path is not None
        info = self._model.info
        family = getattr(self._model, "family", None) or info.adapter
        versions = ", ".join(f"{k} {v}" for k, v in library_versions().items() if v is not None)
        return (
            f"{self._path.name} disagrees with the plain computation for {info.id!r} (family {family}): "
            f"item {item.id!r}, {describe(item, sample, request)}: {fast:.6f} vs {plain:.6f} "
            f"(|difference| {diff:.2g} > {TOLERANCE:g}) with {versions}; nothing of the item was "
            f"written. Rerun with {self._path.remedy}, and please report these versions"
        )


def describe(item: Item, sample: SampleResult, request: ScoreRequest) -> str:
    """Which score of the item ``request`` is, for a message: a CGLA condition, an option letter."""
    own_image = request.image is item.image
    for condition in sample.conditions:
        if condition.prompt == request.context and condition.continuation == request.continuation:
            shown = "" if own_image else ", under another image of the item (a view's)"
            return f"CGL of condition {condition.attribute!r} ({condition.kind}){shown}"
    if request.continuation in prompts.letter_continuations():
        return f"score of option {request.continuation.strip()!r}"
    return f"score of {request.continuation!r}"


def summary(samples: Sequence[SampleResult], model: Mapping[str, Any]) -> dict[str, Any]:
    """results.json's scorer fields of ``model``, recomputed from the samples' ``scoring``.

    ``model`` is the section as the engine gave it: ``scorer_used`` and ``scorer_fallback_reason``
    are kept where no sample records its scorers (a run that scored nothing, an engine without the
    choice); ``scorer_check`` (``path``, ``requested``) gets the counts of the checked samples.
    """
    out: dict[str, Any] = {}
    scored = [s.scoring for s in samples if s.scoring is not None and s.scoring.scorers is not None]
    if scored:
        counts: dict[str, int] = {}
        for scoring in scored:
            assert scoring.scorers is not None
            label = "+".join(scoring.scorers)
            counts[label] = counts.get(label, 0) + 1
        used = next(iter(counts)) if len(counts) == 1 and "+" not in next(iter(counts)) else "mixed"
        reasons: dict[str, int] = {}
        for scoring in scored:
            if scoring.fallback is not None:
                reasons[scoring.fallback] = reasons.get(scoring.fallback, 0) + 1
        out.update(
            scorer_used=used,
            scorer_samples=dict(sorted(counts.items())),
            scorer_fallback_reason=(
                "; ".join(
                    reason if n == len(samples) else f"{reason} ({n} of {len(samples)} samples)"
                    for reason, n in reasons.items()
                )
                if reasons
                else None
            ),
        )
    asked = model.get("scorer_check")
    checks = [s.scoring.check for s in samples if s.scoring is not None and s.scoring.check is not None]
    if isinstance(asked, Mapping) or checks:
        base = dict(asked) if isinstance(asked, Mapping) else {"path": None, "requested": None}
        out["scorer_check"] = {
            "path": base.get("path"),
            "requested": base.get("requested"),
            "items": len(checks),
            "conditions": sum(c.scores for c in checks),
            "max_abs_diff": max((c.max_abs_diff for c in checks), default=None),
            "tolerance": TOLERANCE,
        }
    return out
