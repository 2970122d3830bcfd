"""Loaded by the stand-in's job processes: ``HfApi.upload_folder`` copies into a local folder ($STANDIN_HUB)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

if os.environ.get("STANDIN_HUB"):
    import huggingface_hub

    def _upload_folder(self: Any, *, repo_id: str, folder_path: str, path_in_repo: str, **kwargs: Any) -> str:
        target = Path(os.environ["STANDIN_HUB"]) / repo_id / path_in_repo
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(folder_path, target)
        log = Path(os.environ["STANDIN_HUB"]) / "uploads.log"
        with log.open("a", encoding="utf-8") as handle:
            handle.write(
                f"{repo_id} {kwargs.get('repo_type')} {path_in_repo} token={'set' if self.token else 'none'}\n"
            )
        return str(target)

    huggingface_hub.HfApi.upload_folder = _upload_folder  # type: ignore[method-assign,assignment]
