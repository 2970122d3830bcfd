"""Hub facts every part asks the same way: is the Hub offline, is a text a Hub id, how to show a model.

Nothing heavy is imported at module level (``huggingface_hub`` loads inside ``hub_offline``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[A-Za-z0-9][\w.\-]*)?$")
"""``name`` or ``org/name`` as the Hub accepts them."""
_TRUE = {"1", "ON", "YES", "TRUE"}


def hub_offline(*, datasets: bool = True) -> bool:
    """Offline mode as set now: ``HF_HUB_OFFLINE`` (or, with ``datasets``, ``HF_DATASETS_OFFLINE``),
    read at call time: the library constants are read once, when huggingface_hub is imported."""
    from huggingface_hub import constants

    names = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE") if datasets else ("HF_HUB_OFFLINE",)
    flags = [os.environ.get(name, "") for name in names]
    return bool(constants.HF_HUB_OFFLINE) or any(flag.strip().upper() in _TRUE for flag in flags)


def has_path_syntax(text: str) -> bool:
    """Whether ``text`` is written as a path (``./x``, ``/x``, ``~/x``, ``a/b/c``, backslashes): then it
    is meant as a local folder, never a Hub id."""
    return text.startswith((".", "/", "~")) or text.count("/") > 1 or "\\" in text


def is_hub_id(text: str) -> bool:
    """Whether ``text`` reads as a Hub id (``name`` or ``org/name``) and not as a path."""
    return not has_path_syntax(text) and HUB_ID.match(text) is not None


def display_name(model_id: str) -> str:
    """How a model is shown in tables: a Hub id as is, a local folder by its last component only."""
    if is_hub_id(model_id) and not Path(model_id).is_absolute():
        return model_id
    return Path(model_id).name or model_id
