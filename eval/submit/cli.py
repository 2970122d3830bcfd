"""``mmspubench submit`` (registered by ``mmspubench.cli``).

Nothing heavy is imported at module level: datasets and huggingface_hub load inside the command,
so ``mmspubench --help`` stays instant.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mmspubench.options import add_fields

SUBMIT_EPILOG = """examples:
  mmspubench eval --model org/model --dataset mmbench/MM-SpuBench --out runs/m   # first: a full run
  mmspubench submit runs/m/results.json --model-repo org/model --dry-run out   # writes out/.eval_results/
  mmspubench submit runs/m/results.json --model-repo org/model                 # opens a pull request

What a run needs to pass: a full run (no --limit) of the published dataset mmbench/MM-SpuBench,
test split, at its published revision, with samples.jsonl beside results.json, of the model
--model-repo names. The run `mmspubench eval` makes with no options (the bundled model on the
bundled synthetic release, runs/default) is refused: it is a demonstration, not a result.
Every figure is recomputed from samples.jsonl and every sample compared with the published item.

The published dataset revision is --dataset-revision, else $MMSPUBENCH_PUBLISHED_REVISION, else
the current commit of --dataset-id on the Hub. The published split is read from the Hub at that
revision, or from $MMSPUBENCH_PUBLISHED_DATASET (a local copy) when set.
"""


def _run_submit(args: argparse.Namespace) -> int:
    from mmspubench.eval.progress_bars import libraries_quiet
    from mmspubench.eval.results import run_inputs
    from mmspubench.eval.submit.submission import (
        check_dry_run,
        open_pull_request,
        validate_submission,
        write_dry_run,
    )
    from mmspubench.outputs import refuse_overlap
    from mmspubench.redact import strip_controls

    if args.dry_run is not None:
        refuse_overlap("--dry-run", args.dry_run, run_inputs(args.results_json), folder=True)
        check_dry_run(Path(args.dry_run))
    with libraries_quiet(progress=False):  # the published split's own "Generating ..." bar is noise here
        submission = validate_submission(
            Path(args.results_json),
            args.model_repo,
            dataset_id=args.dataset_id,
            revision=args.dataset_revision,
        )
    print(f"prompt variant: {submission.variant}")  # a known one: submit refuses any other name
    results_files = _results_repo_files(args, submission)
    if args.dry_run is not None:
        path = write_dry_run(submission, Path(args.dry_run))
        print(f"validated {submission.n} samples; wrote {path} (dry run, nothing sent)")
        if results_files is not None:
            from mmspubench.eval.submit.results_dataset import write_results_dry_run

            for written in write_results_dry_run(results_files, Path(args.dry_run)):
                print(f"wrote {written} (for {args.results_repo}; dry run, nothing sent)")
        print(strip_controls(submission.yaml_text), end="")  # a run's texts drive no terminal
        return 0
    url = open_pull_request(submission, token=args.token)
    print(f"validated {submission.n} samples; opened {url}")
    if results_files is not None:
        from mmspubench.eval.submit.results_dataset import open_results_pull_request

        url = open_results_pull_request(submission, results_files, args.results_repo, token=args.token)
        print(f"opened {url} on the results dataset {args.results_repo}")
    return 0


def _results_repo_files(args: argparse.Namespace, submission: Any) -> dict[str, bytes] | None:
    """The run files for ``--results-repo`` (checked before anything is written or sent), else None."""
    if not args.results_repo:
        return None
    from huggingface_hub.utils import HFValidationError, validate_repo_id
    from mmspubench.errors import MMSpuBenchError
    from mmspubench.eval.submit.results_dataset import results_files

    try:
        validate_repo_id(args.results_repo)
    except HFValidationError as err:
        raise MMSpuBenchError(
            f"--results-repo {args.results_repo!r} is not a valid repo id ({err})"
        ) from None
    return results_files(submission, Path(args.results_json))


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``submit`` to the ``mmspubench`` parser."""
    from mmspubench.eval.submit.submission import SubmitOptions

    submit = sub.add_parser(
        "submit",
        help="validate a run and open a PR adding .eval_results/mm-spubench.yaml to a model repo",
        description="Validate results.json + samples.jsonl, recompute every figure, write the Hub entries.",
        epilog=SUBMIT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_fields(submit, SubmitOptions)
    submit.set_defaults(func=_run_submit)
