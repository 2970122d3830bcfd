"""``curate annotate --backend openai`` against a hostile server: the key is never shown or
written, a missing key is refused, malformed answers and escape sequences are one clean line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from mmspubench.cli import main
from mmspubench.redact import forget_secrets

from ..eval.standin_server import StandInServer
from .fixtures import VALID, first_candidates, one_error_line, select_argv

pytest.importorskip("openai", reason="the api extra (openai) is not installed")

SECRET = "sk-curate-0123456789abcdef-do-not-leak"


@pytest.fixture(scope="module")
def candidates(tiny_clip: Path, image_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four candidates (the first of a selection)."""
    full = tmp_path_factory.mktemp("sel") / "cand"
    assert main(select_argv(image_tree, tiny_clip, full, "--k", "3", "--l", "5")) == 0
    return first_candidates(full, tmp_path_factory.mktemp("sel4") / "cand", 4)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("MMSPU_CURATE_KEY", SECRET)
    yield
    forget_secrets()  # another test's check must not pass because this one registered the key


def _annotate(server: StandInServer, cand: Path, out: Path, key_env: str = "MMSPU_CURATE_KEY") -> int:
    return main(
        ["curate", "annotate", "--candidates", str(cand), "--model", "served-vlm", "--out", str(out),
         "--backend", "openai", "--base-url", server.base_url, "--api-key-env", key_env]
    )  # fmt: skip


def _nothing_written(tmp_path: Path) -> bool:
    return list(tmp_path.iterdir()) == []


def _all_bytes(tmp_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())


def test_a_server_echoing_the_key_in_its_401_never_shows_it(
    candidates: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with StandInServer(policy=lambda n: "401") as server:
        assert _annotate(server, candidates, tmp_path / "draft") == 2
    err = capsys.readouterr().err
    line = one_error_line(err)
    assert SECRET not in err and "AuthenticationError" in line and "Bearer ***" in line
    assert server.log[0]["auth"] == f"Bearer {SECRET}" and _nothing_written(tmp_path)


def test_escape_sequences_in_the_servers_error_are_stripped(
    candidates: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with StandInServer(policy=lambda n: "escape") as server:  # a 400 whose text holds ESC ] ... and the key
        assert _annotate(server, candidates, tmp_path / "draft") == 2
    err = capsys.readouterr().err
    line = one_error_line(err)
    assert "\x1b" not in err and "\x9b" not in err and "\x07" not in err and SECRET not in err
    assert "bad model Bearer ***" in line and _nothing_written(tmp_path)


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("content_int", "message content is int 5; expected a string"),
        ("content_list", "message content is list"),
        ("no_choices", "has no choices (got [])"),
        ("number", "the chat completion is 5; expected an object"),
    ],
)
def test_a_malformed_answer_is_one_line_and_writes_nothing(
    action: str, message: str, candidates: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with StandInServer(policy=lambda n: action) as server:
        assert _annotate(server, candidates, tmp_path / "draft") == 2
    line = one_error_line(capsys.readouterr().err)
    assert "the server's answer is not usable" in line and message in line, line
    assert _nothing_written(tmp_path)


def test_the_key_given_as_the_variable_name_is_refused_unshown(
    candidates: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with StandInServer(answer=json.dumps(VALID)) as server:
        assert _annotate(server, candidates, tmp_path / "draft", key_env=SECRET) == 2
    err = capsys.readouterr().err
    assert "expected the NAME of the environment variable" in one_error_line(err) and SECRET not in err
    assert not server.log and _nothing_written(tmp_path)


def test_the_key_as_the_variable_name_is_refused_by_every_backend(
    candidates: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["curate", "annotate", "--candidates", str(candidates), "--model", "unused", "--out",
            str(tmp_path / "draft"), "--backend", "transformers", "--api-key-env", SECRET]  # fmt: skip
    assert main(argv) == 2  # annotate.json records the option: it must be a name
    err = capsys.readouterr().err
    assert "expected the NAME" in one_error_line(err) and SECRET not in err and _nothing_written(tmp_path)


def test_an_unset_key_variable_is_refused_not_replaced(
    candidates: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MMSPU_CURATE_KEY")
    with StandInServer(answer=json.dumps(VALID)) as server:
        assert _annotate(server, candidates, tmp_path / "draft") == 2
    line = one_error_line(capsys.readouterr().err)
    assert "--api-key-env MMSPU_CURATE_KEY: the variable is not set" in line and "none" in line
    assert not server.log and _nothing_written(tmp_path)


def test_none_is_a_server_without_a_key_and_the_key_is_never_written(
    candidates: Path, tmp_path: Path
) -> None:
    with StandInServer(answer=json.dumps(VALID)) as server:
        assert _annotate(server, candidates, tmp_path / "none", key_env="none") == 0
        assert {r["auth"] for r in server.chat_requests()} == {"Bearer EMPTY"}
    run = json.loads((tmp_path / "none" / "annotate.json").read_text())
    assert run["config"]["api_key_env"] == "none"
    with StandInServer(answer=json.dumps(VALID)) as server:
        assert _annotate(server, candidates, tmp_path / "keyed") == 0
        assert {r["auth"] for r in server.chat_requests()} == {f"Bearer {SECRET}"}
    assert SECRET.encode() not in _all_bytes(tmp_path)
