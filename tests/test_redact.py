"""``mmspubench.redact``: what is masked, what is stripped, and what is left alone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.backends.api_key import check_key_env
from mmspubench.redact import clean, forget_secrets, looks_like_secret, register_secret


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    forget_secrets()
    yield
    forget_secrets()


CASES = [
    # (text, cleaned)
    ("bad key Bearer sk-test-0123456789abcdef", "bad key Bearer ***"),
    ("Authorization: Bearer abc.def-ghi", "Authorization: Bearer ***"),
    ('{"api_key": "abcd1234efgh"}', '{"api_key": "***"}'),
    ("GET /v1?api-key=abcd1234&x=1", "GET /v1?api-key=***&x=1"),
    ("http://user:pw1234@host:8000/v1", "http://user:***@host:8000/v1"),
    (
        "token hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567 used",
        "token *** used",
    ),  # hf_ and 34, as the Hub makes them
    ("ghp_abcdefghijklmnopqrst", "***"),
    ("AKIAABCDEFGHIJKLMNOP", "***"),
    ("\x1b]0;owned\x07title", "title"),  # OSC window title to BEL
    ("\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\", "link"),  # OSC hyperlink to ST
    ("\x1b[2J\x1b[31mred\x1b[0m", "red"),  # CSI clear screen, colours
    ("\x9b2Jone-byte CSI", "one-byte CSI"),
    ("a\x00b\x07c\x08d\x7fe\x85f", "abcdef"),  # C0, DEL, C1
    ("left\u202eright", "leftright"),  # bidi override
    ("lone ESC\x1b", "lone ESC"),
    ("two\nlines\tand a tab", "two\nlines\tand a tab"),
    # left alone: ordinary messages of the package
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    ("no log-probability for prompt token 12345", "no log-probability for prompt token 12345"),
    ("task-0123456789abcdefghij and disk-sk", "task-0123456789abcdefghij and disk-sk"),
    ("basic checks; a secret plan", "basic checks; a secret plan"),
    # folder names that merely start with hf (not tokens): kept, so an error line still says where
    ("cannot write hf_runs/biased--standard", "cannot write hf_runs/biased--standard"),
    ("/tmp/hfjobs-out/x and hf-jobs-output/y", "/tmp/hfjobs-out/x and hf-jobs-output/y"),
    ("/data/hf_home_2024_sweeps/hub", "/data/hf_home_2024_sweeps/hub"),
    ("hf_experimentsForTheSweep/run", "hf_experimentsForTheSweep/run"),
    (
        "revision 0123456789abcdef0123456789abcdef01234567",
        "revision 0123456789abcdef0123456789abcdef01234567",
    ),
    ("café, 猫, emoji 🐈", "café, 猫, emoji 🐈"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_clean(text: str, expected: str) -> None:
    assert clean(text) == expected


def test_a_registered_key_is_masked_even_when_split_by_escapes() -> None:
    register_secret("plainvalue")
    assert clean("got pla\x1b[0minvalue back") == "got *** back"
    assert looks_like_secret("x plainvalue") and not looks_like_secret("OPENAI_API_KEY")
    register_secret("ab")  # too short to mask without garbling messages
    assert clean("a b ab") == "a b ab"


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "MY_KEY_2",
        "_k",
        "none",
        "my_openai_key_for_prod_v2",
        "HF_API_TOKEN_PROD",
        "SK_OPENAI_KEY_FOR_PROD",
    ],
)
def test_variable_names_are_accepted(name: str) -> None:
    check_key_env(name)


@pytest.mark.parametrize(
    "value",
    [
        "sk-proj-abcdefghijklmnop0123",
        "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
        "Ab3dEf6hIj9kLm2nOp5q",
        "a b",
        "1ABC",
        "x" * 200,
    ],
)
def test_key_shaped_names_are_refused_unshown(value: str) -> None:
    with pytest.raises(MMSpuBenchError) as info:
        check_key_env(value)
    assert value not in str(info.value) and "expected the NAME" in str(info.value)
