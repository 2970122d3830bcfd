"""Secrets and terminal control characters out of every text a command shows or logs.

Text from a server or a model (an error body, a raw answer, a model name) may carry the API key
(a careless server echoes the ``Authorization`` header) and terminal escape sequences (an OSC
window title, a clear screen). :func:`clean` is the one filter for it: the guard applies it to the
last line of every command and to the traceback logs, and the backends apply it where they build
a message from a server's text.

Masked: every value registered with :func:`register_secret` (the keys in use, registered when a
client is made), and anything shaped like a credential (``Bearer ...``, ``sk-...``, ``hf_`` and 30 or more letters and digits,
``api_key=...``, the password of a URL). Stripped: ESC sequences (CSI, OSC, DCS and two-byte
ones), C0 and C1 control characters but newline and tab, DEL, and Unicode's bidirectional
overrides (they reorder what the terminal shows).
"""

from __future__ import annotations

import re

MASK = "***"
"""What a secret is replaced with."""
MIN_SECRET_LENGTH = 4
"""Shorter registered values are not masked (masking ``a`` would garble every message)."""

_SECRETS: set[str] = set()

_CREDENTIAL = re.compile(
    r"(?P<keep>\bbearer\s+)[A-Za-z0-9._~+/=-]{4,}"
    r"|(?P<keep2>\b(?:api[_-]?key|access[_-]?token|authorization|password|secret)[\"']?\s*[:=]\s*[\"']?"
    r"(?:bearer\s+)?)"
    r"[^\s\"',;&}]{4,}"
    r"|(?-i:\b(?:sk|pk|rk)[-_][A-Za-z0-9_-]{16,})"  # providers' key prefixes are lower-case:
    r"|(?-i:\bhf_[A-Za-z0-9]{30,})"  # a Hugging Face token: hf_ and 34 letters or digits; hf_runs/ is a folder
    r"|(?-i:\b(?:ghp|gho|ghs|github_pat|glpat|xox[abprs])[-_][A-Za-z0-9_-]{8,})"  # HF_API_TOKEN is a name
    r"|(?-i:\bAKIA[0-9A-Z]{16}\b)"
    r"|(?P<keep3>://[^/\s:@]*:)[^/\s@]+(?=@)",
    re.IGNORECASE,
)
"""Credential shapes: the part after ``keep`` groups is masked, the rest of a match entirely."""

_CONTROL = re.compile(
    r"\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC (window title, hyperlinks) to BEL or ST
    r"|\x1b[P^_X][^\x1b\x9c]*(?:\x1b\\|\x9c)?"  # DCS, PM, APC, SOS strings
    r"|\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI (colours, cursor moves, clear screen)
    r"|\x9b[0-?]*[ -/]*[@-~]?"  # the one-byte CSI
    r"|\x1b[ -~]?"  # two-byte escapes and a lone ESC
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)
"""Terminal control sequences and characters (newline and tab are kept)."""


def register_secret(value: str | None) -> None:
    """Mask ``value`` (an API key in use) wherever :func:`redact` or :func:`clean` sees it from now on."""
    if value and len(value.strip()) >= MIN_SECRET_LENGTH:
        _SECRETS.add(value.strip())


def forget_secrets() -> None:
    """Drop every registered secret (tests)."""
    _SECRETS.clear()


_TOKEN = re.compile(
    r"\bhf_[A-Za-z0-9]{30,}|\b(?:ghp|gho|ghs)_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{60,}"
    r"|\bsk-(?:proj-)?[A-Za-z0-9_-]{32,}|\bAKIA[0-9A-Z]{16}\b"
)
"""Tokens as their issuers make them (Hugging Face, GitHub, OpenAI, AWS), without a ``key=`` around
them: what may not sit in a shipped file."""


def holds_token(text: str) -> bool:
    """Whether ``text`` holds a string shaped like an issued token (a file that may not be shipped)."""
    return _TOKEN.search(text) is not None


def looks_like_secret(text: str) -> bool:
    """Whether ``text`` holds a registered secret or something shaped like a credential."""
    return any(s in text for s in _SECRETS) or _CREDENTIAL.search(text) is not None


def redact(text: str) -> str:
    """``text`` with every registered secret and credential-shaped token replaced by ``***``."""
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return _CREDENTIAL.sub(_mask, text)


def _mask(match: re.Match[str]) -> str:
    keep = match.group("keep") or match.group("keep2") or match.group("keep3") or ""
    return keep + MASK


def strip_controls(text: str) -> str:
    """``text`` without terminal escape sequences and control characters (newline and tab kept)."""
    return _CONTROL.sub("", text)


def clean(text: str) -> str:
    """``text`` safe to print: control sequences stripped first (so none can split a key), then
    secrets masked."""
    return redact(strip_controls(text))
