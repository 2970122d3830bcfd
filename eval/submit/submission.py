"""Result submission: validate a run, recompute its figures, write ``.eval_results/mm-spubench.yaml``.

Nothing submitted is taken on faith. A run is accepted only when

- results.json and the samples.jsonl beside it parse, every sample's CGLs and option scores are
  finite log-probabilities and every id appears once;
- the run covers the whole published split (no ``--limit``) of the published dataset id, at the
  published revision (see ``published_revision``);
- every sample agrees with the published item of its id: answer, types, class name, conditions,
  prompts and continuations (``published``);
- every figure of results.json's ``accuracy`` and ``cgla`` sections is finite, in range, and equal
  to the figure recomputed from the samples with ``mmspubench.eval.results.recompute``.

The entries are written with huggingface_hub's ``EvalResultEntry`` and
``eval_result_entries_to_yaml``; the task ids are the ones the dataset's ``eval.yaml`` declares.
This module does not import gradio: the CLI and the Space's Submit tab both call it.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import MISSING, dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from mmspubench.dataset_builder.eval_yaml import TASKS
from mmspubench.dataset_builder.hub import is_hub_id
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.config import RunConfig
from mmspubench.eval.prompts import CEILING_NOTE, CGLA_VARIANTS, VARIANTS
from mmspubench.eval.records import SampleResult
from mmspubench.eval.replies.rederive import run_style
from mmspubench.eval.results_file import Dataset, Model, Results, read_results_file
from mmspubench.eval.submit.checks import (
    check_run_stamps,
    check_sample_consistency,
    check_split_ids,
    published_split,
)
from mmspubench.eval.submit.published import (
    check_against_dataset,
    check_prompt_templates,
    published_facts,
    published_items,
)
from mmspubench.eval.submit.thinking_check import check_thinking_record, check_thinking_samples
from mmspubench.eval.variants import is_ceiling, variant_label
from mmspubench.markup import is_hub_model
from mmspubench.options import option

if TYPE_CHECKING:
    from huggingface_hub import EvalResultEntry

PUBLISHED_DATASET_ID = "mmbench/MM-SpuBench"
"""The Hub id of the published benchmark; results on any other dataset are refused."""
REVISION_ENV = "MMSPUBENCH_PUBLISHED_REVISION"
"""Environment variable naming the published dataset revision (commit sha) when the Hub is not asked."""
YAML_PATH = ".eval_results/mm-spubench.yaml"
"""Path of the entries file in the model repo."""
TOLERANCE = 1e-9
"""Largest difference, relative to max(1, |value|), between a submitted and a recomputed figure."""
PERCENT_KEYS = ("overall", "by_type", "ci95", "acc")
"""Keys of the ``accuracy``/``cgla`` sections whose numbers are percentages in [0, 100]."""
MAX_SAMPLES_BYTES = 160 * 2**20
"""Largest samples.jsonl the Space's Submit tab takes (the upload limit of the whole page follows
it). Sized from the largest valid run: a realistic worst-case line (5 core and 5 spurious
conditions with 80-character attributes, the bound of ``curate annotate``, each prompt under a
long chat template; a 40-character class name, a 256-character raw output and four option scores)
is 7.6 kB as ``sample_line`` writes it; with every view (four rotations, the blind answer, the
letter probabilities and 32 interventions, the most a run asks, each with its answer and ten CGLs)
it is 28.3 kB in logprob mode and 34.7 kB in generate mode (a 256-character raw output for each
answer). x 2,400 items x 2 for margin = 158.7 MiB, rounded up; under the 256 MiB that every
reader of samples.jsonl takes."""
MAX_RESULTS_BYTES = 2**20
"""Largest results.json the Submit tab takes (a real one is about 5 kB)."""
TASK_FIGURES: dict[str, tuple[str, str]] = {
    "mcq_accuracy": ("accuracy", "overall"),
    "blind_accuracy": ("blind", "accuracy"),
    "cgla_accuracy": ("cgla", "acc"),
}
"""Where each eval.yaml task's value lives in results.json."""


def view_sections() -> tuple[str, ...]:
    """results.json sections of the registered views, in registry order: each recomputed from
    samples.jsonl before a submission (a section the run's metrics do not name, or one that
    disagrees, is refused)."""
    from mmspubench.eval.views.registry import VIEWS

    return tuple(name for name, view in VIEWS.items() if view.section is not None)


@dataclass(frozen=True, slots=True)
class Submission:
    """A validated run, ready to be written or sent as a pull request."""

    model_repo: str
    """Model repo the pull request goes to."""
    dataset_id: str
    """Published dataset id the run used."""
    dataset_revision: str
    """Published dataset revision the run used."""
    entries: tuple[EvalResultEntry, ...]
    """One entry per task of eval.yaml that the run computed."""
    yaml_text: str
    """Content of ``.eval_results/mm-spubench.yaml``."""
    n: int
    """Number of items in the run."""
    variant: str = "standard"
    """The run's prompt variant (:func:`~mmspubench.eval.variants.variant_label`), shown with the verdict."""


@dataclass(frozen=True, slots=True)
class SubmitOptions:
    """``mmspubench submit``'s options."""

    results_json: str = option(
        MISSING, "results.json of a run (samples.jsonl beside it)", positional=True, metavar="RESULTS_JSON"
    )
    """results.json of the run; its samples.jsonl sits beside it."""
    model_repo: str = option(MISSING, "Hub model repo to open the pull request on")
    """Hub model repository the pull request goes to."""
    dry_run: str | None = option(None, "write the files under DIR instead of sending", metavar="DIR")
    """Folder the files are written to instead of sending them."""
    dataset_id: str = option(PUBLISHED_DATASET_ID, f"published dataset (default: {PUBLISHED_DATASET_ID})")
    """The published dataset the run must be of."""
    dataset_revision: str | None = option(None, "published dataset revision (commit sha)")
    """Its revision (commit sha); ``None``: the published one."""
    token: str | None = option(None, "Hub token (default: the logged-in token)")
    """Hub token; ``None``: the logged-in one."""
    results_repo: str | None = option(
        None,
        "also open a PR adding results.json + samples.jsonl under runs/<model>/<revision-or-time>/ "
        "of this results dataset (the Space's leaderboard and CGLA view read it)",
        metavar="ORG/RESULTS",
    )
    """Results dataset the run's files also go to (a pull request); ``None``: none."""


def published_revision(dataset_id: str = PUBLISHED_DATASET_ID, explicit: str | None = None) -> str:
    """The dataset revision a submission must match.

    In order: ``explicit`` (``submit --dataset-revision``), the ``MMSPUBENCH_PUBLISHED_REVISION``
    environment variable (set on the Space), else the current commit of ``dataset_id`` on the Hub.
    """
    if explicit:
        return explicit
    if os.environ.get(REVISION_ENV):
        return os.environ[REVISION_ENV]
    from huggingface_hub import HfApi
    from mmspubench.dataset_builder.hub import hub_offline
    from mmspubench.dataset_builder.load import network_errors

    hint = f"pass --dataset-revision SHA or set {REVISION_ENV}"
    if hub_offline(datasets=False):
        raise MMSpuBenchError(
            f"cannot look up the published revision of {dataset_id!r}: Hub offline mode; {hint}"
        )
    try:
        sha = HfApi().dataset_info(dataset_id).sha
    except (ValueError, *network_errors()) as err:  # an invalid id or any Hub failure: one actionable line
        raise MMSpuBenchError(
            f"cannot look up the published revision of {dataset_id!r} on the Hub ({type(err).__name__}); {hint}"
        ) from None
    if not sha:
        raise MMSpuBenchError(f"the Hub reported no revision for {dataset_id!r}; pass --dataset-revision SHA")
    return sha


def _walk_numbers(obj: Any, path: str) -> list[tuple[str, Any]]:
    """Every leaf of a JSON value with its dotted path."""
    if isinstance(obj, Mapping):
        return [leaf for key, value in obj.items() for leaf in _walk_numbers(value, f"{path}.{key}")]
    if isinstance(obj, list):
        return [leaf for i, value in enumerate(obj) for leaf in _walk_numbers(value, f"{path}[{i}]")]
    return [(path, obj)]


def check_ranges(results: Results, where: str) -> None:
    """Refuse NaN/infinite values anywhere in the aggregates, and percentages outside [0, 100]."""
    from mmspubench.eval.views.registry import paper

    for section in paper():
        for path, value in _walk_numbers(results.section(section), section):
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            if not math.isfinite(value):
                raise MMSpuBenchError(f"{where}: field {path!r}: value {value!r} is not a finite number")
            key = path.split(".")[1].split("[")[0] if "." in path else ""
            if key in PERCENT_KEYS and not 0.0 <= value <= 100.0:
                raise MMSpuBenchError(
                    f"{where}: field {path!r}: value {value!r} is outside [0, 100] (a percentage)"
                )
            if key.startswith("n") and value < 0:
                raise MMSpuBenchError(f"{where}: field {path!r}: count {value!r} is negative")


def check_samples(samples: tuple[SampleResult, ...], where: str) -> None:
    """Each id once; CGLs and option scores (the published order's, each rotation's, the blind
    answer's and each intervention's) finite log-probabilities (<= 0)."""
    seen: set[str] = set()
    for sample in samples:
        if sample.id in seen:
            raise MMSpuBenchError(f"{where}: record {sample.id!r}: field 'id': appears more than once")
        seen.add(sample.id)
        scores = [("cgl", c.cgl) for c in sample.conditions] + [
            ("option_scores", s) for s in sample.option_scores or ()
        ]
        # The confound views' letter scores are log-probabilities too, checked alike.
        for i, r in enumerate(sample.rotations or ()):
            scores += [(f"rotations[{i}].option_scores", s) for s in r.reply.option_scores or ()]
        if sample.blind is not None:
            scores += [("blind.option_scores", s) for s in sample.blind.option_scores or ()]
        for i, e in enumerate(sample.interventions or ()):
            scores += [(f"interventions[{i}].option_scores", s) for s in e.reply.option_scores or ()]
            scores += [(f"interventions[{i}].cgls", s) for s in e.cgls or ()]
        if sample.cgla_min is not None:
            scores.append(("cgla_min", sample.cgla_min))
        for field, value in scores:
            # Log-probabilities are <= 0; the small slack absorbs float rounding of a sum of logs.
            if not math.isfinite(value) or (field != "cgla_min" and value > 1e-6):
                raise MMSpuBenchError(
                    f"{where}: record {sample.id!r}: field {field!r}: value {value!r} is not a finite log-probability"
                )


def json_kind(value: Any) -> str:
    """The JSON kind a figure is written as: ``boolean``, ``integer``, ``number`` (a float),
    ``null``, ``string``, or the Python type's name for anything else (``bool`` is tested before
    ``int``, which it subclasses)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if value is None:
        return "null"
    return "string" if isinstance(value, str) else type(value).__name__


def _same_figure(submitted: Any, recomputed: Any) -> bool:
    """Whether a recorded figure equals the recomputed one in kind and value (a leaf of the
    sections: no object or list). Counts are integers and must be recorded as integers (``1``,
    never ``true`` or ``1.0``: Python's ``True == 1`` let a forged kind through); a float figure
    may be recorded as a whole JSON integer (``50`` for ``50.0``: JSON has one number type and
    JavaScript or jq print a whole float so) and is compared within :data:`TOLERANCE`."""
    kinds = (json_kind(submitted), json_kind(recomputed))
    if kinds == ("integer", "integer"):
        return bool(submitted == recomputed)
    if kinds in {("number", "number"), ("integer", "number")}:
        try:
            value = float(submitted)
        except OverflowError:  # an integer beyond any float is no figure of a run
            return False
        return abs(value - recomputed) <= TOLERANCE * max(1.0, abs(recomputed))
    return kinds[0] == kinds[1] and bool(submitted == recomputed)


def check_replies(results: Results, recomputed: Mapping[str, Any], where: str) -> None:
    """results.json's ``replies`` against the one recomputed from the samples: checked where it is
    written (a run made before the section existed has none; a logprob run none either)."""
    from mmspubench.eval.replies.summary import SECTION

    if results.replies is not None:
        compare_aggregates(results.replies, recomputed.get(SECTION), SECTION, where)


def compare_aggregates(submitted: Any, recomputed: Any, path: str, where: str) -> None:
    """Refuse the first figure where the submitted aggregates differ from the recomputed ones."""
    if isinstance(recomputed, Mapping) and isinstance(submitted, Mapping):
        for key in sorted(set(recomputed) | set(submitted)):
            if key not in submitted or key not in recomputed:
                side = "missing from" if key not in submitted else "not computed from the samples, but in"
                raise MMSpuBenchError(f"{where}: field '{path}.{key}' is {side} results.json")
            compare_aggregates(submitted[key], recomputed[key], f"{path}.{key}", where)
        return
    if isinstance(recomputed, list) and isinstance(submitted, list) and len(recomputed) == len(submitted):
        for i, (a, b) in enumerate(zip(submitted, recomputed, strict=True)):
            compare_aggregates(a, b, f"{path}[{i}]", where)
        return
    if _same_figure(submitted, recomputed):
        return
    kinds = (json_kind(submitted), json_kind(recomputed))
    kind = f" (a JSON {kinds[0]}, not the {kinds[1]} eval writes)" if kinds[0] != kinds[1] else ""
    raise MMSpuBenchError(
        f"{where}: field {path!r}: submitted value {submitted!r} disagrees with {recomputed!r} recomputed "
        f"from samples.jsonl{kind}; refusing the submission"
    )


def _load(results_path: Path) -> tuple[Results, tuple[SampleResult, ...], RunConfig]:
    from mmspubench.eval.results import SAMPLES_NAME, read_finished_samples

    results = read_results_file(results_path)
    samples_path = results_path.parent / SAMPLES_NAME
    if not samples_path.is_file():
        raise MMSpuBenchError(f"{samples_path}: missing; submit needs the samples.jsonl beside results.json")
    samples = read_finished_samples(samples_path)
    return results, tuple(samples), results.run_config(results_path)


def _check_identity(
    results: Results, config: RunConfig, model_repo: str, dataset_id: str, where: str
) -> None:
    """The run is a full test-split run of the published dataset, of the model it is submitted for."""
    dataset = results.dataset or Dataset()
    if dataset.id != dataset_id:
        local = f" (a local dataset at {dataset.get('path')})" if dataset.get("path") else ""
        raise MMSpuBenchError(
            f"{where}: field 'dataset.id': {dataset.id!r}{local} is not the published dataset {dataset_id!r}; "
            f"evaluate with --dataset {dataset_id}"
        )
    if dataset.split != "test" or config.limit is not None:
        raise MMSpuBenchError(f"{where}: only full runs on the test split can be submitted (no --limit)")
    model = results.model or Model()
    model_id = str(model.id) if "id" in model.fields else ""
    hub = is_hub_model(model.to_json())  # not Inspect's openai/gpt-4o-mini
    if hub and is_hub_id(model_id) and not Path(model_id).exists() and model_id != model_repo:
        raise MMSpuBenchError(
            f"{where}: field 'model.id': the run evaluated {model_id!r}, not {model_repo!r}"
        )


def _check_revision(results: Results, revision: str, where: str) -> None:
    """The run read the published dataset at its published revision."""
    recorded = (results.dataset or Dataset()).revision
    if recorded != revision:
        raise MMSpuBenchError(
            f"{where}: field 'dataset.revision': {recorded!r} is not the published revision {revision!r}"
        )


_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+!_-]{0,63}")
"""A package version as pip writes one (PEP 440 and local labels), nothing a page could render."""


def check_stamps(results: Results, where: str) -> None:
    """``created_at`` and ``package_version`` go into the entries the model page shows: an ISO time
    and a version, or absent; never free text."""
    created, version = results.created_at, results.package_version
    if created is not None:
        try:
            datetime.fromisoformat(str(created))
        except ValueError:
            raise MMSpuBenchError(f"{where}: field 'created_at': {created!r} is not an ISO time") from None
    if version is not None and (not isinstance(version, str) or not _VERSION.fullmatch(version)):
        raise MMSpuBenchError(f"{where}: field 'package_version': {version!r} is not a package version")


def check_fair(config: RunConfig, where: str) -> None:
    """Known variants only; a ceiling variant (``attribute-hint``: the answer's core attributes in
    the prompt) is refused."""
    for key, known in (("prompt_variant", VARIANTS), ("cgla_prompt_variant", CGLA_VARIANTS)):
        value = getattr(config, key)
        if value not in known:
            raise MMSpuBenchError(
                f"{where}: field 'config.{key}': {value!r} is not a prompt variant of this package "
                f"(expected one of {', '.join(known)})"
            )
    if is_ceiling(config.prompt_variant):
        raise MMSpuBenchError(
            f"{where}: field 'config.prompt_variant': {config.prompt_variant!r} is a {CEILING_NOTE}; "
            "it cannot be submitted (rerun with another --prompt-variant)"
        )


def _entries(
    results: Results, config: RunConfig, dataset_id: str, revision: str
) -> tuple[EvalResultEntry, ...]:
    from huggingface_hub import EvalResultEntry

    prompts = config.prompts.get("version", "?") if isinstance(config.prompts, Mapping) else "?"
    notes = (
        f"answer_mode={config.answer_mode}; core_reduction={config.core_reduction}; prompts v{prompts}; "
        f"prompt_variant={variant_label(config.to_json())}; "
        f"n={(results.dataset or Dataset()).get('n')}; mm-spubench {_shown_version(results)}"
    )
    entries = []
    for task in TASKS:
        section, key = TASK_FIGURES[task.id]
        block = results.section(section)
        if block is None:
            continue
        # results.json holds percentages; an entry carries its task's declared scale (eval_yaml.TASKS).
        value = float(block[key]) / 100.0 if task.scale == "fraction" else float(block[key])
        entries.append(
            EvalResultEntry(
                dataset_id=dataset_id,
                task_id=task.id,
                value=round(value, 6),
                dataset_revision=revision,
                date=results.created_at or None,
                source_url=f"https://huggingface.co/datasets/{dataset_id}",
                source_name="MM-SpuBench (mmspubench eval)",
                notes=notes,
            )
        )
    if not entries:
        declared = ", ".join(t.id for t in TASKS)
        raise MMSpuBenchError(f"the run computed none of the eval.yaml tasks ({declared}); nothing to submit")
    return tuple(entries)


def _shown_version(results: Results) -> str:
    """``package_version`` for the entries' notes; ``?`` when the file has none."""
    return str(results.package_version) if "package_version" in results.keys else "?"


SAMPLES_FILE = "samples.jsonl"
"""The samples file beside a run's results.json."""


def check_judge(results: Results, config: RunConfig, where: str) -> None:
    """A run read by a judge records it whole: ``config.extract`` judge, the judge's model, base URL
    and prompt version, and results.json's ``judge`` the same (a run without one records none)."""
    from mmspubench.eval.replies.rederive import run_judge_fault

    if "judge" in results.extra:
        raise MMSpuBenchError(
            f"{where}: field 'judge' must be an object, got a JSON {json_kind(results.extra['judge'])}"
        )
    fault = run_judge_fault(config, results.section("judge"))
    if fault is not None:
        raise MMSpuBenchError(f"{where}: field {fault[0]!r}: {fault[1]}")


def check_run_samples(
    results: Results, samples: tuple[SampleResult, ...], config: RunConfig, results_path: Path
) -> None:
    """The checks of a run folder that need no published dataset, first half: results.json's
    figures in range and its stamps plain, its prompts this package's, its ``model.thinking`` the
    one its config and samples show (:mod:`~mmspubench.eval.submit.thinking_check`), and each
    sample valid and consistent with itself (``submit`` and a sweep's fetched runs both run them)."""
    where = str(results_path)
    check_ranges(results, where)
    check_stamps(results, where)
    check_prompt_templates(config, where)
    check_judge(results, config, where)
    samples_where = str(results_path.parent / SAMPLES_FILE)
    check_thinking_record(results, config, where)
    check_samples(samples, samples_where)
    check_sample_consistency(samples, config, samples_where)


def check_run_figures(
    results: Results, samples: tuple[SampleResult, ...], config: RunConfig, results_path: Path
) -> None:
    """Second half: as many samples as results.json counts, reasoning only in a run that records
    a style or thinking on (:mod:`~mmspubench.eval.submit.thinking_check`), every section of results.json
    (accuracy, CGLA and the confound views) recomputed from the samples, and every sample line
    stamped by the run that results.json describes."""
    from mmspubench.eval.results import recompute

    where = str(results_path)
    n = (results.dataset or Dataset()).get("n")
    if n != len(samples):
        raise MMSpuBenchError(
            f"{where}: field 'dataset.n': {n!r} but {SAMPLES_FILE} holds {len(samples)} records"
        )
    check_thinking_samples(results, samples, str(results_path.parent / SAMPLES_FILE))
    recomputed = recompute(samples, config)
    for section in view_sections():  # a section the run's metrics do not name is refused too
        compare_aggregates(results.section(section), recomputed.get(section), section, where)
    check_replies(results, recomputed, where)
    check_run_stamps(results_path.parent / SAMPLES_FILE, results, config, where)


def validate_submission(
    results_path: Path,
    model_repo: str,
    dataset_id: str = PUBLISHED_DATASET_ID,
    revision: str | None = None,
) -> Submission:
    """Validate the run of ``results_path`` for ``model_repo`` and build its entries and YAML."""
    from huggingface_hub import eval_result_entries_to_yaml
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(model_repo)
    except HFValidationError as err:
        raise MMSpuBenchError(f"--model-repo {model_repo!r} is not a valid repo id ({err})") from None
    where = str(results_path)
    results, samples, config = _load(results_path)
    # What the run itself shows wrong comes first: the Hub (offline, unreachable) is asked only
    # for a run that could be submitted at all.
    _check_identity(results, config, model_repo, dataset_id, where)
    check_fair(config, where)
    check_run_samples(results, samples, config, results_path)
    published = published_revision(dataset_id, revision)
    _check_revision(results, published, where)
    samples_where = str(results_path.parent / SAMPLES_FILE)
    check_split_ids(
        samples, (results.dataset or Dataset()).to_json(), published_split(dataset_id, published), where
    )
    facts = published_facts(dataset_id, published, config)
    style = run_style((results.model or Model()).get("reasoning_style", "none"), where)
    check_against_dataset(
        samples, published_items(dataset_id, published), config, samples_where, facts, style
    )
    check_run_figures(results, samples, config, results_path)
    entries = _entries(results, config, dataset_id, published)
    text = yaml.safe_dump(eval_result_entries_to_yaml(list(entries)), sort_keys=False, allow_unicode=True)
    variant = variant_label(config.to_json())
    return Submission(model_repo, dataset_id, published, entries, text, len(samples), variant)


def check_dry_run(out_dir: Path) -> None:
    """Refuse a ``--dry-run`` that is a file (before anything is read: the answer comes at once)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise MMSpuBenchError(f"{out_dir}: --dry-run is a file; expected a folder (created if missing)")


def write_dry_run(submission: Submission, out_dir: Path) -> Path:
    """Write the file the pull request would add under ``out_dir``; returns its path."""
    from mmspubench.eval.results import write_bytes_atomic

    check_dry_run(out_dir)
    target = out_dir / YAML_PATH
    write_bytes_atomic(target, [submission.yaml_text.encode("utf-8")])
    return target


def open_pull_request(submission: Submission, token: str | None = None) -> str:
    """Open a pull request adding the entries file to the model repo; returns the PR's URL."""
    from mmspubench.eval.submit.hub_pr import open_hub_pull_request

    return open_hub_pull_request(
        submission.model_repo,
        "model",
        {YAML_PATH: submission.yaml_text.encode("utf-8")},
        "Add MM-SpuBench evaluation results",
        f"Adds `{YAML_PATH}` with MM-SpuBench results on {submission.dataset_id}@"
        f"{submission.dataset_revision[:12]} ({submission.n} items), validated and recomputed "
        "from the per-sample records by `mmspubench submit`.",
        token,
    )
