"""One commit opened as a pull request on the Hub (``mmspubench submit``'s pull requests on the model
repo and on the results dataset)."""

from __future__ import annotations

from collections.abc import Mapping

from mmspubench.errors import MMSpuBenchError


def open_hub_pull_request(
    repo_id: str,
    repo_type: str,
    files: Mapping[str, bytes],
    message: str,
    description: str,
    token: str | None = None,
) -> str:
    """Open a pull request on ``repo_id`` adding ``files`` (path in the repo -> contents) in one
    commit; its URL. A Hub, network or value error is one line naming the repo."""
    from huggingface_hub import CommitOperationAdd, HfApi
    from huggingface_hub.errors import HfHubHTTPError

    operations = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=data) for p, data in files.items()]
    try:
        info = HfApi(token=token).create_commit(
            repo_id=repo_id,
            repo_type=repo_type,
            operations=operations,
            commit_message=message,
            commit_description=description,
            create_pr=True,
        )
    except (HfHubHTTPError, OSError, ValueError) as err:
        raise MMSpuBenchError(f"could not open a pull request on {repo_id!r}: {err}") from None
    return str(info.pr_url or info.commit_url)
