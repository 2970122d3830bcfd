"""A small stand-in for an OpenAI-compatible server on 127.0.0.1, for fault injection.

It answers ``POST /v1/chat/completions`` like a hosted API without vLLM's extensions (no prompt
log-probabilities; ``/tokenize`` is a 404), and each request's fate is chosen by ``policy``
(request number -> action): ``ok``, ``429``, ``500``, ``401`` (the body echoes the Authorization
header, as a careless server might), ``slow`` (sleeps ``slow_seconds`` first), ``hang``
(waits until :meth:`release`) or ``die`` (drops the connection and stops listening).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class StandInServer:
    """Run with ``with StandInServer(policy) as server: ... server.base_url ...``."""

    def __init__(
        self, policy: Callable[[int], str] = lambda n: "ok", answer: str = "A", slow_seconds: float = 2.0
    ):
        self.policy = policy
        self.answer = answer
        self.slow_seconds = slow_seconds
        self.log: list[dict[str, Any]] = []
        """Every request: ``path``, ``auth`` (Authorization header), ``body`` (parsed JSON), ``action``."""
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._dead = threading.Event()
        self._chat_count = 0
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
            if not path.endswith("/chat/completions"):
                action = "404"
            else:
                action = self.policy(self._chat_count)
                self._chat_count += 1
            self.log.append({"path": path, "auth": auth, "body": body, "action": action})
        return action

    def _completion(self, body: Any) -> dict[str, Any]:
        return {
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "?"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": self.answer},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up
                    self.wfile.write(data)

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
                if action == "ok":
                    self._send(200, server._completion(body))
                elif action == "429":
                    self._send(429, {"error": {"message": "rate limited", "type": "rate_limit"}}, fast_retry)
                elif action == "500":
                    self._send(500, {"error": {"message": "internal error", "type": "server"}}, fast_retry)
                elif action == "401":
                    self._send(401, {"error": {"message": f"bad key {auth}", "type": "auth"}})
                else:
                    self._send(404, {"error": {"message": "not found", "type": "not_found"}})

        return Handler
