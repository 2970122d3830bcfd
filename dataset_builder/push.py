"""Publish a built folder to a Hub dataset repository in one commit.

The folder is checked first (card, ``eval.yaml`` and at least one ``data/test-*.parquet``). The
commit adds every file of the folder and deletes remote ``data/`` files the new build does not
hold, so an old shard never lingers next to the new ones. ``dry_run`` prints the operations and
sends nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from mmspubench.errors import MMSpuBenchError

OperationKind = Literal["create_repo", "create_branch", "add", "delete"]
_SKIPPED_DIRS = {".git", ".cache", ".huggingface"}


@dataclass(frozen=True, slots=True)
class PushOperation:
    """One step of a push, as shown by ``--dry-run`` and performed by a real push."""

    kind: OperationKind
    """What the step does."""
    path_in_repo: str
    """File path in the repository (empty for repository-level steps)."""
    local_path: Path | None = None
    """Local file uploaded by an ``add`` step."""
    size: int = 0
    """Bytes uploaded by an ``add`` step."""

    def describe(self) -> str:
        """One human-readable line."""
        if self.kind == "add":
            return f"add    {self.path_in_repo} ({self.size:,} bytes)"
        if self.kind == "delete":
            return f"delete {self.path_in_repo}"
        return f"{self.kind} {self.path_in_repo}".rstrip()


class HubApi(Protocol):
    """The part of ``huggingface_hub.HfApi`` a push uses (a fake stands in for it in tests)."""

    def create_repo(self, repo_id: str, **kwargs: Any) -> Any: ...
    def create_branch(self, repo_id: str, **kwargs: Any) -> Any: ...
    def list_repo_files(self, repo_id: str, **kwargs: Any) -> list[str]: ...
    def create_commit(self, repo_id: str, operations: Any, **kwargs: Any) -> Any: ...


def check_built_folder(repo_dir: Path) -> list[Path]:
    """The files of a built folder, relative paths sorted; raise if it is not a built folder."""
    if not repo_dir.is_dir():
        raise MMSpuBenchError(
            f"{repo_dir}: --repo-dir not found; expected a folder written by `mmspubench build`"
        )
    for required in ("README.md", "eval.yaml"):
        if not (repo_dir / required).is_file():
            raise MMSpuBenchError(
                f"{repo_dir}: missing {required}; expected a folder written by `mmspubench build`"
            )
    if not sorted((repo_dir / "data").glob("test-*.parquet")):
        raise MMSpuBenchError(
            f"{repo_dir}: no data/test-*.parquet; expected a folder written by `mmspubench build`"
        )
    files = []
    for path in sorted(repo_dir.rglob("*")):
        rel = path.relative_to(repo_dir)
        if rel.parts[0] in _SKIPPED_DIRS or not path.is_file():
            continue
        if path.is_symlink():
            raise MMSpuBenchError(f"{path}: symbolic link in the folder to push; expected plain files")
        files.append(rel)
    return files


def plan_push(
    repo_dir: Path, repo_id: str, *, revision: str | None = None, remote_files: Sequence[str] = ()
) -> list[PushOperation]:
    """The operations a push sends: create repo (and branch), add every file, delete stale ``data/`` files."""
    from mmspubench.dataset_builder.eval_yaml_check import check_eval_yaml

    files = check_built_folder(repo_dir)
    check_eval_yaml(repo_dir)
    ops = [PushOperation("create_repo", repo_id)]
    if revision is not None:
        ops.append(PushOperation("create_branch", f"{repo_id}@{revision}"))
    local = {rel.as_posix() for rel in files}
    for rel in files:
        path = repo_dir / rel
        ops.append(PushOperation("add", rel.as_posix(), path, path.stat().st_size))
    for remote in sorted(remote_files):
        if remote.startswith(("data/", "inspect/")) and remote not in local:
            ops.append(PushOperation("delete", remote))
    return ops


def push(
    repo_dir: Path,
    repo_id: str,
    *,
    revision: str | None = None,
    private: bool = False,
    dry_run: bool = False,
    api: HubApi | None = None,
) -> list[PushOperation]:
    """Publish ``repo_dir`` to the dataset repo ``repo_id``; return the operations sent (or planned)."""
    repo_dir = Path(repo_dir)
    if dry_run:
        ops = plan_push(repo_dir, repo_id, revision=revision)
        where = (
            f"{repo_id}" + (f" (branch {revision})" if revision else "") + (" [private]" if private else "")
        )
        print(f"dry run: would push {repo_dir} to dataset {where}:", file=sys.stdout)
        for op in ops:
            print(f"  {op.describe()}")
        print("  (remote data/ files absent from this build would also be deleted)")
        return ops
    check_built_folder(repo_dir)
    return _push_for_real(repo_dir, repo_id, revision, private, api)


def _push_for_real(
    repo_dir: Path, repo_id: str, revision: str | None, private: bool, api: HubApi | None
) -> list[PushOperation]:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
    from huggingface_hub.errors import HFValidationError
    from mmspubench.dataset_builder.load import network_errors

    hub: HubApi = api if api is not None else cast("HubApi", HfApi())
    try:
        hub.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        if revision is not None:
            hub.create_branch(repo_id, branch=revision, repo_type="dataset", exist_ok=True)
        remote = hub.list_repo_files(repo_id, repo_type="dataset", revision=revision)
        ops = plan_push(repo_dir, repo_id, revision=revision, remote_files=remote)
        commit_ops: list[Any] = [
            CommitOperationAdd(path_in_repo=op.path_in_repo, path_or_fileobj=str(op.local_path))
            for op in ops
            if op.kind == "add"
        ]
        commit_ops += [
            CommitOperationDelete(path_in_repo=op.path_in_repo) for op in ops if op.kind == "delete"
        ]
        hub.create_commit(
            repo_id,
            commit_ops,
            commit_message="Upload MM-SpuBench built with `mmspubench build`",
            repo_type="dataset",
            revision=revision,
        )
    except (HFValidationError, *network_errors()) as err:
        raise MMSpuBenchError(f"push to {repo_id} failed: {type(err).__name__}: {err}") from None
    print(
        f"pushed {repo_dir} to https://huggingface.co/datasets/{repo_id}"
        + (f" (branch {revision})" if revision else "")
    )
    return ops
