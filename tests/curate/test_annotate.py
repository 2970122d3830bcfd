"""``curate annotate``: a tiny LLaVA under constrained decoding, retries, failures, the OpenAI path."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import datasets
import pytest
from mmspubench.cli import main
from mmspubench.curate import annotate as annotate_mod
from mmspubench.curate.annotate import balanced_letters, compose_options
from mmspubench.curate.backends import Request
from mmspubench.dataset_builder.builder import validate_release

from ..eval.tiny_models import tiny_model_dir
from .fixtures import VALID, first_candidates, one_error_line, select_argv

NO_KEY = ("--api-key-env", "none")
"""The test servers need no key."""


@pytest.fixture(scope="module")
def candidates(tiny_clip: Path, image_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sel") / "cand"
    assert main(select_argv(image_tree, tiny_clip, out, "--k", "3", "--l", "5")) == 0
    return out


def _annotate(cand: Path, out: Path, *extra: str, model: str = "unused") -> int:
    return main(
        ["curate", "annotate", "--candidates", str(cand), "--model", model, "--out", str(out), *extra]
    )


def test_letters_are_balanced_and_options_hold_the_truth() -> None:
    letters = balanced_letters(10, seed=3)
    assert sorted(Counter(letters).values()) == [2, 2, 3, 3]
    assert letters == balanced_letters(10, seed=3) and letters != balanced_letters(10, seed=4)
    assert compose_options("cat", ["dog", "fox", "owl", "emu"], "C") == ["dog", "fox", "cat", "owl"]
    assert compose_options("cat", ["dog", "fox", "owl"], "A") == ["cat", "dog", "fox", "owl"]


def test_tiny_llava_draft_passes_build_untouched(
    candidates: Path, session_cache: Path, tmp_path: Path
) -> None:
    model = tiny_model_dir("llava", session_cache)
    candidates = first_candidates(candidates, tmp_path / "cand", 3)
    draft = tmp_path / "draft"
    assert _annotate(candidates, draft, "--backend", "transformers", model=str(model)) == 0
    lines = [json.loads(x) for x in (candidates / "candidates.jsonl").read_text().splitlines()]
    prov = [json.loads(x) for x in (draft / "provenance.jsonl").read_text().splitlines()]
    records = json.loads((draft / "annotation.json").read_text())
    assert [p["id"] for p in prov] == [c["id"] for c in lines]
    assert {r["id"] for r in records} == {p["id"] for p in prov if p["status"] == "ok"}
    assert records, "constrained decoding gave no valid item"
    for p in prov:
        assert p["prompt_version"] == "1" and p["attempts"] and p["annotator"]["backend"] == "transformers"
        assert p["status"] == "ok" or p["reason"]
    by_id = {c["id"]: c for c in lines}
    for record in records:
        cand = by_id[record["id"]]
        above = [a["class_name"] for a in cand["above"]]
        assert record["options"] == compose_options(cand["class_name"], above, record["answer"])
    assert (
        max(Counter(r["answer"] for r in records).values())
        - min(Counter(r["answer"] for r in records).values())
        <= 1
    )
    assert len(validate_release(draft)) == len(records)
    repo = tmp_path / "repo"
    assert main(["build", "--source", str(draft), "--out", str(repo)]) == 0
    built = datasets.load_dataset(str(repo), split="test")
    assert sorted(built["id"]) == sorted(r["id"] for r in records)


class ScriptedAnnotator:
    """Answers from a script: candidate position -> one answer per attempt."""

    def __init__(self, script: dict[int, list[str]]) -> None:
        self.script, self.calls = script, 0
        self.info = {"backend": "scripted", "model": "none"}
        self.seen: dict[int, int] = {}

    def answer(self, requests: Sequence[Request], schema: dict[str, Any], attempt: int) -> list[str]:
        out = []
        for request in requests:
            position = self.seen.setdefault(id(request.image), len(self.seen))
            answers = self.script.get(position, [json.dumps(VALID)])
            out.append(answers[min(attempt, len(answers) - 1)])
        return out


def _scripted(monkeypatch: pytest.MonkeyPatch, script: dict[int, list[str]]) -> ScriptedAnnotator:
    fake = ScriptedAnnotator(script)
    monkeypatch.setattr(annotate_mod, "open_annotator", lambda *a, **k: fake)
    return fake


def test_invalid_answers_are_retried_then_recorded_as_failed(
    candidates: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad_type = json.dumps({**VALID, "spurious_types": ["background", "background"]})
    _scripted(monkeypatch, {0: ["{not json", json.dumps(VALID)], 1: [bad_type]})
    draft = tmp_path / "draft"
    assert _annotate(candidates, draft, "--backend", "transformers", "--attempts", "3") == 0
    prov = [json.loads(x) for x in (draft / "provenance.jsonl").read_text().splitlines()]
    first, second = prov[0], prov[1]
    assert first["status"] == "ok" and len(first["attempts"]) == 2
    assert "not valid JSON" in first["attempts"][0]["error"]
    assert second["status"] == "failed" and len(second["attempts"]) == 3
    assert "spurious_types" in second["reason"] and "given twice" in second["reason"]
    ids = {r["id"] for r in json.loads((draft / "annotation.json").read_text())}
    assert first["id"] in ids and second["id"] not in ids
    assert not (draft / "data" / "images" / f"{second['id']}.png").exists()
    assert main(["build", "--source", str(draft), "--out", str(tmp_path / "repo")]) == 0


def test_no_valid_answer_at_all_writes_nothing(
    candidates: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _scripted(monkeypatch, {i: ['{"question": 3}'] for i in range(100)})
    draft = tmp_path / "draft"
    assert _annotate(candidates, draft, "--backend", "transformers") == 2
    err = one_error_line(capsys.readouterr().err)
    assert "no candidate gave a valid item" in err
    assert list(tmp_path.iterdir()) == []


def test_a_model_without_image_support_is_refused(
    candidates: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.eval.tiny.tokenizer import train_tokenizer
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = train_tokenizer([], vocab_size=300, words=["a", "b"])
    model_dir = tmp_path / "text-only"
    LlamaForCausalLM(
        LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                    num_attention_heads=2, num_key_value_heads=2)
    ).save_pretrained(model_dir)  # fmt: skip
    tok.save_pretrained(model_dir)
    capsys.readouterr()
    out = tmp_path / "draft"
    assert _annotate(candidates, out, "--backend", "transformers", model=str(model_dir)) == 2
    err = one_error_line(capsys.readouterr().err)
    assert "takes no image input" in err
    assert not out.exists() and not list(tmp_path.glob(".draft*"))


class _ChatServer(BaseHTTPRequestHandler):
    """A minimal OpenAI-compatible ``/v1/chat/completions`` that records requests."""

    received: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.received.append(body)
        if body["model"] == "text-only":  # what vLLM's server answers for images to a text model
            error = {"error": {"message": "text-only is not a multimodal model", "type": "BadRequestError"}}
            self._send(400, error)
            return
        reply = {
            "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": json.dumps(VALID)}}],
        }  # fmt: skip
        self._send(200, reply)

    def _send(self, status: int, reply: dict[str, Any]) -> None:
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def chat_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_openai_backend_sends_the_schema_and_the_image(
    candidates: Path, chat_server: str, tmp_path: Path
) -> None:
    pytest.importorskip("openai")
    _ChatServer.received.clear()
    draft = tmp_path / "draft"
    assert (
        _annotate(
            candidates, draft, *NO_KEY, "--backend", "openai", "--base-url", chat_server, model="served-vlm"
        )
        == 0
    )
    n = len((candidates / "candidates.jsonl").read_text().splitlines())
    assert len(_ChatServer.received) == n
    body = _ChatServer.received[0]
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["required"][-1] == "question"
    user = body["messages"][1]["content"]
    assert user[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert "ranked these classes above the true one" in user[1]["text"]
    assert body["temperature"] == 0.0 and body["model"] == "served-vlm"
    assert len(validate_release(draft)) == n


@pytest.mark.parametrize("max_length", [80, 300, 400])
def test_text_patterns_bound_the_length_and_the_characters(max_length: int) -> None:
    import re

    from mmspubench.curate.prompts import _text

    pattern = re.compile(_text(max_length)["pattern"])
    for length in (1, max_length - 1, max_length):
        assert pattern.match("a" * length)
    assert not pattern.match("a" * (max_length + 1)) and not pattern.match("")
    for bad in (" leading space", 'a "quote"', "a back\\slash", "two\nlines"):
        assert not pattern.match(bad)


def test_the_schema_keeps_type_sets_distinct() -> None:
    from mmspubench.curate.prompts import response_schema

    choices = response_schema()["properties"]["spurious_types"]["enum"]
    assert len(choices) == 9 + 36 and all(len(set(c)) == len(c) for c in choices)


def test_an_unreachable_server_is_one_line_and_writes_nothing(
    candidates: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("openai")
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    draft = tmp_path / "draft"
    url = f"http://127.0.0.1:{port}/v1"
    assert _annotate(candidates, draft, *NO_KEY, "--backend", "openai", "--base-url", url) == 2
    err = one_error_line(capsys.readouterr().err)
    assert "APIConnectionError" in err and url in err
    assert list(tmp_path.iterdir()) == []


def test_candidates_from_a_dataset_get_png_images(
    tiny_clip: Path, image_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = sorted(str(p) for p in image_tree.glob("*/*.png"))
    data = datasets.Dataset.from_dict(
        {"picture": paths, "name": [Path(p).parent.name for p in paths]},
        features=datasets.Features({"picture": datasets.Image(), "name": datasets.Value("string")}),
    )
    data.save_to_disk(str(tmp_path / "ds"))
    columns = ["--image-column", "picture", "--label-column", "name", "--k", "3", "--l", "5"]
    argv = select_argv(tmp_path / "ds", tiny_clip, tmp_path / "cand", *columns, source="ImageNet-R")
    assert main(argv) == 0
    _scripted(monkeypatch, {})
    draft = tmp_path / "draft"
    assert _annotate(tmp_path / "cand", draft, "--backend", "transformers") == 0
    records = json.loads((draft / "annotation.json").read_text())
    assert records and all(r["image"] == f"data/images/{r['id']}.png" for r in records)
    assert all(r["source"] == "ImageNet-R" for r in records)
    from PIL import Image

    for record in records:
        with Image.open(draft / record["image"]) as im, Image.open(paths[int(record["id"])]) as original:
            assert im.format == "PNG" and im.convert("RGB").tobytes() == original.convert("RGB").tobytes()
    assert len(validate_release(draft)) == len(records)


def test_a_served_model_without_image_support_is_one_line(
    candidates: Path, chat_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("openai")
    draft = tmp_path / "draft"
    args = (*NO_KEY, "--backend", "openai", "--base-url", chat_server)
    assert _annotate(candidates, draft, *args, model="text-only") == 2
    err = one_error_line(capsys.readouterr().err)
    assert "'text-only': the server refused the request" in err and "vision-language model" in err
    assert list(tmp_path.iterdir()) == []


def _edited_candidates(cand: Path, out: Path, edit: Any) -> Path:
    """A copy of ``cand`` whose first candidate line is replaced by ``edit(line)`` (text)."""
    out.mkdir()
    (out / "selection.json").write_text((cand / "selection.json").read_text())
    lines = (cand / "candidates.jsonl").read_text().splitlines()
    (out / "candidates.jsonl").write_text("\n".join([edit(lines[0]), *lines[1:]]) + "\n")
    return out


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda line: line[:-1] + ', "id": "x"}', "key 'id' appears twice"),
        (lambda line: line.replace('"true_rank"', '"rank"'), "field 'true_rank': expected int, got None"),
        (lambda line: line.replace('"above": [', '"above": [7, '), "field 'above': 7 is not an object"),
        (lambda line: "[1, 2]", "line 1: a list; expected a JSON object"),
        (lambda line: line[:10], "line 1: not valid JSON"),
        (
            lambda line: re.sub(r'"image": "[^"]*"', '"image": "../outside.png"', line),
            "image '../outside.png' of class",
        ),
    ],
)
def test_a_bad_candidate_line_is_one_line_and_writes_nothing(
    edit: Any, message: str, candidates: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cand = _edited_candidates(candidates, tmp_path / "cand", edit)
    draft = tmp_path / "draft"
    assert _annotate(cand, draft, "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1") == 2
    err = one_error_line(capsys.readouterr().err)
    assert "candidates.jsonl" in err and message in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cand"]


def test_an_answer_with_a_repeated_key_is_retried(
    candidates: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    twice = json.dumps(VALID)[:-1] + ', "question": "Which one?"}'
    _scripted(monkeypatch, {0: [twice, json.dumps(VALID)]})
    draft = tmp_path / "draft"
    assert (
        _annotate(first_candidates(candidates, tmp_path / "cand", 1), draft, "--backend", "transformers") == 0
    )
    first = json.loads((draft / "provenance.jsonl").read_text().splitlines()[0])
    assert first["status"] == "ok" and "key 'question' appears twice" in first["attempts"][0]["error"]


def test_the_draft_cannot_replace_its_candidates(
    candidates: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cand = first_candidates(candidates, tmp_path / "cand", 1)
    before = sorted(p.name for p in cand.iterdir())
    args = ("--backend", "transformers", "--overwrite")
    assert _annotate(cand, cand / "draft", *args) == 2
    assert "--out lies inside --candidates" in one_error_line(capsys.readouterr().err)
    assert _annotate(cand, cand, *args) == 2
    assert "--out is the --candidates folder" in one_error_line(capsys.readouterr().err)
    assert sorted(p.name for p in cand.iterdir()) == before


def test_the_vllm_backend_without_vllm_is_one_line(
    candidates: Path, session_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here (its path is tested in test_vllm.py)")
    model = tiny_model_dir("llava", session_cache)
    draft = tmp_path / "draft"
    assert _annotate(candidates, draft, "--backend", "vllm", model=str(model)) == 2
    assert "--backend vllm: vLLM is not installed" in one_error_line(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []
