"""What curate prints to the terminal carries no control sequence and no key in use."""

from __future__ import annotations

from mmspubench.curate.cli import printable, printable_report
from mmspubench.redact import forget_secrets, register_secret


def test_a_report_line_with_escape_sequences_prints_none() -> None:
    text = "annotators: alice\x1b]0;owned\x07, bob\x1b[2J\nitems: 3"
    shown = printable_report(text)
    assert "\x1b" not in shown and "\x07" not in shown
    assert shown.splitlines()[1] == "items: 3" and "alice" in shown and "bob" in shown


def test_a_failure_reason_never_prints_the_key_in_use() -> None:
    register_secret("sk-test-0123456789abcdef")
    try:
        assert "sk-test-0123456789abcdef" not in printable("401: bad key sk-test-0123456789abcdef")
    finally:
        forget_secrets()
