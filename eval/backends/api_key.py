"""``--api-key-env NAME``: the API key is read from an environment variable, never given or written.

One rule for ``eval --backend openai`` and ``curate annotate --backend openai``:

- ``NAME`` must be an environment variable's name. A value shaped like a key (``sk-...``, or any
  text that is not a variable name) is refused without being echoed: it would otherwise be
  written into results.json or the draft's provenance as the variable's "name".
- The variable must be set and non-empty: a missing key is one line, never a silent placeholder.
- ``--api-key-env none`` says the server needs no key (a local vLLM server): the client then sends
  the placeholder key ``EMPTY`` (the OpenAI client cannot send none), as vLLM's own examples do.

The key read is registered with :func:`mmspubench.redact.register_secret`, so no message or log
can show it.
"""

from __future__ import annotations

import os
import re

from mmspubench.errors import MMSpuBenchError
from mmspubench.redact import looks_like_secret, register_secret

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
"""The variable ``--api-key-env`` names by default (the openai backend and ``curate annotate``)."""
NO_KEY = "none"
"""``--api-key-env none``: the server needs no key."""
PLACEHOLDER_KEY = "EMPTY"
"""What the client sends as the key under ``--api-key-env none``."""
MAX_NAME_LENGTH = 128

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _looks_random(name: str) -> bool:
    """A long name mixing lower-case letters and digits without a word break reads as a token."""
    return (
        len(name) >= 20
        and "_" not in name
        and any(c.isdigit() for c in name)
        and any(c.islower() for c in name)
    )


def check_key_env(name: str, flag: str = "--api-key-env") -> None:
    """Refuse an ``--api-key-env`` (or ``flag``: ``--judge-api-key-env``) that is not a variable
    name (without showing it)."""
    if name == NO_KEY:
        return
    if not name:
        raise MMSpuBenchError(
            f"{flag}: empty; give the name of the environment variable that holds the key "
            f"(e.g. OPENAI_API_KEY), or {NO_KEY} for a server that needs no key"
        )
    if (
        not _NAME.fullmatch(name)
        or len(name) > MAX_NAME_LENGTH
        or looks_like_secret(name)
        or _looks_random(name)
    ):
        raise MMSpuBenchError(
            f"{flag}: expected the NAME of the environment variable that holds the key (e.g. "
            "OPENAI_API_KEY), got something that is not a variable name (not shown: it may be the key "
            "itself; export it in a variable and name that)"
        )


def read_api_key(name: str, flag: str = "--api-key-env") -> str:
    """The key in ``$name`` (checked, registered for masking); the placeholder under ``none``."""
    check_key_env(name, flag)
    if name == NO_KEY:
        return PLACEHOLDER_KEY
    value = os.environ.get(name)
    if value is None or not value.strip():
        state = "is not set" if value is None else "is empty"
        raise MMSpuBenchError(
            f"{flag} {name}: the variable {state}; export the key in it, or pass "
            f"{flag} {NO_KEY} for a server that needs no key"
        )
    register_secret(value)
    return value.strip()
