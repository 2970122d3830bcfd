"""A small stand-in for an OpenAI-compatible server on 127.0.0.1, for fault injection.

It answers ``POST /v1/chat/completions`` like a hosted API without vLLM's extensions (no prompt
log-probabilities; ``/tokenize`` is a 404), and each request's fate is chosen by ``policy``
(request number -> action): ``ok``, ``429``, ``500``, ``401`` (the body echoes the Authorization
header, as a careless server might), ``slow`` (sleeps ``slow_seconds`` first), ``hang``
(waits until :meth:`release`) or ``die`` (drops the connection and stops listening). Hostile
answers: ``content_int``, ``content_list`` (the message content is not a string), ``no_choices``
(``choices`` empty), ``number`` (the whole body is ``5``), ``escape`` (a 400 whose message holds
terminal escape sequences and the Authorization header), ``huge`` (a 400 with a 5 MB message), ``bad_usage`` (token counts that are a string and negative), ``trickle`` (the answer one byte
per 0.1 s over ``slow_seconds``).

``scoring`` makes it a vLLM-like server with ``/tokenize`` and prompt log-probabilities over a toy
tokenizer (one token per character, see :func:`toy_tokens`), honest (``vllm``) or with one fault:
``chat_ignores_continue`` (``/tokenize`` honours ``continue_final_message``, chat completions do
not: end-of-turn and generation-prompt tokens are in the prompt), ``positive`` / ``nan`` (one
prompt log-probability is +25 / NaN), ``short`` (one log-probability fewer than the tokens),
``nonprefix`` (``/tokenize`` of the context is not a prefix of that of context + continuation),
``float_tokens`` (``/tokenize`` answers floats), ``string_logprob`` (a log-probability is the string
``"-0.5"``), ``bool_ids`` (a prompt token id is ``true``). ``prefix_cache``: honest, and it honours
``skip_reading_prefix_cache: false`` like a vLLM engine: blocks of :data:`BLOCK` tokens of earlier
prompts (their image tokens keyed by the image, as vLLM hashes it) are read (at most all but the last token), reported in ``usage.prompt_tokens_details``, and
their log-probabilities are garbage (-9.0), as vLLM leaves them. Action ``html``: a 200 that is not JSON.

Reasoning APIs: ``refuse`` names request parameters answered with the 400 a real server gives
(:data:`REFUSALS`: OpenAI's reasoning models refuse ``max_tokens`` and a ``temperature`` other than
1, its other models ``reasoning_effort``, all of them ``chat_template_kwargs``; a vLLM older than
0.6.4 refuses ``max_completion_tokens``);
``reasoning`` is returned apart in the message's ``reasoning_field`` (vLLM's ``reasoning_content``,
or ``reasoning``), counted (one token a word) in ``usage.completion_tokens_details.reasoning_tokens``.
A thinking model that writes its reasoning inline is an ``answer_of`` that writes ``<think>...</think>``
before its letter, with ``word_tokens`` (its completion tokens counted one a word) and
``finish_of`` (``length`` for a reply the budget cut).
:data:`REASONING_MODEL` is such a model's keywords. Actions ``length`` (``finish_reason: length``),
``reasoning_int`` (the reasoning is a number), ``bad_finish`` (``finish_reason`` is a number).
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

BOS, EOT, IMAGE = 1, 2, 3
ROLES = {"system": 4, "user": 5, "assistant": 6}


def toy_tokens(messages: list[dict[str, Any]], *, special: bool, continue_final: bool) -> list[int]:
    """The toy chat template: [BOS] role content EOT per message (image = 4 IMAGE tokens, a
    character = its code point + 100); the last assistant message left open under
    ``continue_final``, else the generation prompt (the assistant role) appended."""
    tokens = [BOS] if special else []
    for message in messages:
        tokens.append(ROLES[message["role"]])
        content = message["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for part in parts:
            tokens += [IMAGE] * 4 if part["type"] == "image_url" else [ord(c) + 100 for c in part["text"]]
        tokens.append(EOT)
    if continue_final and messages[-1]["role"] == "assistant":
        return tokens[:-1]
    return [*tokens, ROLES["assistant"]]


def _openai_400(message: str, param: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


REFUSALS: dict[str, dict[str, Any]] = {
    "max_tokens": _openai_400(
        "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead.",
        "max_tokens",
        "unsupported_parameter",
    ),
    "temperature": _openai_400(
        "Unsupported value: 'temperature' does not support 0 with this model. "
        "Only the default (1) value is supported.",
        "temperature",
        "unsupported_value",
    ),
    "reasoning_effort": _openai_400(
        "Unsupported parameter: 'reasoning_effort' is not supported with this model.",
        "reasoning_effort",
        "unsupported_parameter",
    ),
    "chat_template_kwargs": _openai_400(  # the OpenAI API: no chat template to pass keywords to
        "Unrecognized request argument supplied: chat_template_kwargs", "chat_template_kwargs", ""
    ),
    "max_completion_tokens": {  # vLLM before 0.6.4 (pydantic's extra="forbid"), its own error shape
        "object": "error",
        "message": "[{'type': 'extra_forbidden', 'loc': ('body', 'max_completion_tokens'), "
        "'msg': 'Extra inputs are not permitted', 'input': 16}]",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    },
}
"""The 400 body a server gives for each refused parameter (OpenAI's shape, old vLLM's)."""

REASONING_MODEL: dict[str, Any] = {
    "refuse": ("max_tokens", "temperature"),
    "reasoning": "The picture shows a kite in the sky, so the answer is the kite.",
}
"""The keywords of a stand-in reasoning model (OpenAI's o-series and GPT-5 refusals, vLLM's reasoning)."""


def refused(body: dict[str, Any], refuse: tuple[str, ...]) -> dict[str, Any] | None:
    """The 400 body for the first refused parameter the request sends (a temperature of 1 is taken)."""
    for name in refuse:
        if name in body and not (name == "temperature" and body[name] == 1):
            return REFUSALS[name]
    return None


BLOCK = 4
"""Block size of the ``prefix_cache`` server's cache."""

GARBAGE = -9.0
"""Log-probability the ``prefix_cache`` server returns for positions it read from its cache."""


def toy_logprob(token: int) -> float:
    """The toy model's log-probability of a prompt token."""
    return -0.01 * (token % 7 + 1)


class StandInServer:
    """Run with ``with StandInServer(policy) as server: ... server.base_url ...``."""

    def __init__(
        self,
        policy: Callable[[int], str] = lambda n: "ok",
        answer: str = "A",
        slow_seconds: float = 2.0,
        scoring: str | None = None,
        answer_of: Callable[[dict[str, Any]], str] | None = None,
        refuse: tuple[str, ...] = (),
        reasoning: str | None = None,
        reasoning_field: str = "reasoning_content",
        finish_of: Callable[[dict[str, Any]], str] | None = None,
        word_tokens: bool = False,
    ):
        self.finish_of = finish_of
        """When given: the ``finish_reason`` from the request body (``length``: cut by the budget)."""
        self.word_tokens = word_tokens
        """Count the answer's completion tokens one a word (a thinking model's inline reasoning
        included), not 1."""
        self.refuse = refuse
        """Request parameters refused with their 400 (:data:`REFUSALS`)."""
        self.reasoning = reasoning
        """Reasoning returned apart in the message's ``reasoning_field``; ``None``: none."""
        self.reasoning_field = reasoning_field
        self.policy = policy
        self.answer_of = answer_of
        """When given: the answer's text from the request body (e.g. from the image it carries)."""
        self.scoring = scoring
        self.answer = answer
        self.slow_seconds = slow_seconds
        self.log: list[dict[str, Any]] = []
        self.gets: list[str] = []
        """The paths of GET requests (none is answered: 501)."""
        """Every request: ``path``, ``auth`` (Authorization header), ``body`` (parsed JSON), ``action``."""
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._dead = threading.Event()
        self._chat_count = 0
        self._blocks: set[tuple[int, ...]] = set()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def release(self) -> None:
        """Let every ``hang`` request go on (they then answer ``ok``)."""
        self._release.set()

    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.log if r["path"].endswith("/chat/completions")]

    def __enter__(self) -> StandInServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        if not self._dead.is_set():
            self._die()

    def _die(self) -> None:
        self._dead.set()
        self._http.shutdown()
        self._http.server_close()

    def _decide(self, path: str, auth: str, body: Any) -> str:
        with self._lock:
            if path.endswith("/tokenize") and self.scoring:
                action = "tokenize"
            elif not path.endswith("/chat/completions"):
                action = "404"
            else:
                action = self.policy(self._chat_count)
                self._chat_count += 1
            self.log.append({"path": path, "auth": auth, "body": body, "action": action})
        return action

    def _tokens(self, body: Any, continue_final: bool) -> list[int]:
        special = bool(body.get("add_special_tokens"))
        tokens = toy_tokens(body["messages"], special=special, continue_final=continue_final)
        if self.scoring == "nonprefix" and continue_final:  # merges across the context's end
            tokens.append(99)
        return tokens

    def _tokenize(self, body: Any) -> dict[str, Any]:
        tokens = self._tokens(body, bool(body.get("continue_final_message")))
        if self.scoring == "float_tokens":
            return {"tokens": [t + 0.5 for t in tokens], "count": len(tokens)}
        return {"tokens": tokens, "count": len(tokens), "max_model_len": 4096}

    def _prompt_logprobs(self, body: Any) -> dict[str, Any]:
        mode = self.scoring
        ids = self._tokens(body, bool(body.get("continue_final_message")) and mode != "chat_ignores_continue")
        logprobs: list[Any] = [None] + [{str(t): {"logprob": toy_logprob(t), "rank": 1}} for t in ids[1:]]
        if mode in ("positive", "nan"):
            logprobs[-1] = {str(ids[-1]): {"logprob": 25.0 if mode == "positive" else math.nan, "rank": 1}}
        if mode == "short":
            logprobs = logprobs[:-1]
        if mode == "string_logprob":
            logprobs[-1] = {str(ids[-1]): {"logprob": "-0.5", "rank": 1}}
        if mode == "bool_ids":
            ids[-1] = True
        found = {"prompt_token_ids": ids, "prompt_logprobs": logprobs}
        return {**found, **self._read_cache(body, ids, logprobs)} if mode == "prefix_cache" else found

    def _read_cache(self, body: Any, ids: list[int], logprobs: list[Any]) -> dict[str, Any]:
        """Positions read from the cache get GARBAGE; the prompt's blocks are cached afterwards."""
        with self._lock:
            cached = 0
            keyed = _by_content(body, ids)
            if body.get("skip_reading_prefix_cache") is False:
                hits = [k for k in range(BLOCK, len(ids), BLOCK) if tuple(keyed[:k]) in self._blocks]
                cached = max(hits, default=0)
            self._blocks.update(tuple(keyed[:k]) for k in range(BLOCK, len(ids) + 1, BLOCK))
        for p in range(1, cached + 1):
            logprobs[p] = {str(ids[p]): {"logprob": GARBAGE, "rank": 1}}
        return {
            "usage": {
                "prompt_tokens": len(ids),
                "completion_tokens": 1,
                "prompt_tokens_details": {"cached_tokens": cached},
            }
        }

    def _completion(self, body: Any) -> dict[str, Any]:
        extra = self._prompt_logprobs(body) if self.scoring and "prompt_logprobs" in body else {}
        answer = self.answer if self.answer_of is None else self.answer_of(body)
        message: dict[str, Any] = {"role": "assistant", "content": answer}
        said = len(answer.split()) if self.word_tokens else 1
        usage: dict[str, Any] = {"prompt_tokens": 10, "completion_tokens": said, "total_tokens": 10 + said}
        if self.reasoning is not None:
            thought = len(self.reasoning.split())
            message[self.reasoning_field] = self.reasoning
            usage = {
                "prompt_tokens": 10,
                "completion_tokens": said + thought,
                "total_tokens": 10 + said + thought,
                "completion_tokens_details": {"reasoning_tokens": thought},
            }
        return {
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "?"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "stop" if self.finish_of is None else self.finish_of(body),
                }
            ],
            "usage": usage,
            **extra,
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(obj).encode()  # NaN goes out as the bare NaN that Python's json reads
                self._send_raw(status, data, "application/json", headers)

            def _trickle(self, data: bytes, seconds: float) -> None:
                padded = b" " * int(seconds * 10) + data  # leading blanks are valid JSON
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(padded)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    for i in range(len(padded)):
                        self.wfile.write(padded[i : i + 1])
                        self.wfile.flush()
                        if i < seconds * 10:
                            time.sleep(0.1)

            def _send_raw(
                self, status: int, data: bytes, kind: str, headers: dict[str, str] | None = None
            ) -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up
                    self.wfile.write(data)

            def do_GET(self) -> None:  # no GET route (vLLM's /version included): 501, as http.server says
                server.gets.append(self.path)
                self.send_error(501, "Unsupported method ('GET')")

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                auth = self.headers.get("authorization", "")
                action = server._decide(self.path, auth, body)
                if action == "die":  # the server goes away: this connection and every later one fail
                    threading.Thread(target=server._die, daemon=True).start()
                    self.close_connection = True
                    self.connection.close()
                    return
                if action == "hang":
                    server._release.wait(60)
                    action = "ok"
                if action == "slow":
                    time.sleep(server.slow_seconds)
                    action = "ok"
                fast_retry = {"retry-after-ms": "1"}
                completion = server._completion(body)  # once: the prefix_cache server caches its prompt
                hostile = _hostile(completion, action, auth)
                if action == "trickle":  # one byte at a time: no single read ever times out
                    self._trickle(json.dumps(completion).encode(), server.slow_seconds)
                elif action == "html":  # a proxy's error page, 200 and not JSON
                    self._send_raw(200, b"<html>\x1b]0;owned\x07 bad gateway</html>", "text/html")
                elif action == "tokenize":
                    self._send(200, server._tokenize(body))
                elif action == "ok" and refused(body, server.refuse) is not None:
                    self._send(400, refused(body, server.refuse))
                elif action == "ok":
                    self._send(200, completion)
                elif hostile is not None:
                    self._send(*hostile)
                elif action == "429":
                    self._send(429, {"error": {"message": "rate limited", "type": "rate_limit"}}, fast_retry)
                elif action == "500":
                    self._send(500, {"error": {"message": "internal error", "type": "server"}}, fast_retry)
                elif action == "401":
                    self._send(401, {"error": {"message": f"bad key {auth}", "type": "auth"}})
                else:
                    self._send(404, {"error": {"message": "not found", "type": "not_found"}})

        return Handler


def image_urls(body: dict[str, Any]) -> list[str]:
    """The ``image_url`` URLs of a request's messages, in order."""
    return [
        part["image_url"]["url"]
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if part.get("type") == "image_url"
    ]


def _by_content(body: dict[str, Any], ids: list[int]) -> list[Any]:
    """The prompt's tokens with each image token keyed by its image's URL, as vLLM keys its cache
    blocks by the image's content hash: a prompt with another image reads no block past it."""
    urls = iter(image_urls(body))
    out: list[Any] = []
    url = None
    for index, token in enumerate(ids):
        if token == IMAGE and (index == 0 or ids[index - 1] != IMAGE):
            url = next(urls, None)
        out.append((IMAGE, url) if token == IMAGE else token)
    return out


def _hostile(completion: dict[str, Any], action: str, auth: str) -> tuple[int, Any] | None:
    """The status and body of a hostile answer, ``None`` for another action."""
    message = completion["choices"][0]["message"]
    if action == "content_int":
        return 200, {
            **completion,
            "choices": [{**completion["choices"][0], "message": {**message, "content": 5}}],
        }
    if action == "content_list":
        content = [{"type": "text", "text": "A"}]
        return 200, {
            **completion,
            "choices": [{**completion["choices"][0], "message": {**message, "content": content}}],
        }
    if action == "bad_usage":
        return 200, {**completion, "usage": {"prompt_tokens": "lots", "completion_tokens": -3}}
    if action in ("length", "bad_finish"):
        finish = "length" if action == "length" else 7
        return 200, {**completion, "choices": [{**completion["choices"][0], "finish_reason": finish}]}
    if action == "reasoning_int":
        return 200, {
            **completion,
            "choices": [{**completion["choices"][0], "message": {**message, "reasoning_content": 5}}],
        }
    if action == "no_choices":
        return 200, {**completion, "choices": []}
    if action == "number":
        return 200, 5
    if action == "escape":
        text = f"\x1b]0;owned\x07\x1b[2J\x1b[31mbad model\x1b[0m \x9b1;1H{auth}"
        return 400, {"error": {"message": text, "type": "invalid_request"}}
    if action == "huge":
        return 400, {"error": {"message": "x" * 5_000_000 + auth, "type": "invalid_request"}}
    return None
