"""A local OpenAI-compatible chat server for tests and benchmarks.

It speaks just enough of the chat completions API for the real `openai` client to talk to it over
HTTP, and answers the way real judge models misbehave: well, with broken JSON, with keys missing,
out of range, unsure, slowly, with 429 or 500, or not at all; and in the ways that must never be
scored: a duplicated key, NaN, `"uncertain": "true"`, a hedging explanation, a 5 MB answer, an HTML
page with status 200.

    with run_llm_server(behaviour="good", latency_s=0.0) as server:
        client = LLMClient(base_url=server.base_url, api_key="test")

A marker `[[llm:<behaviour>]]` in the user prompt overrides the default behaviour for that request.

Run it by hand (benchmarks, manual checks):

    python -m tests.llm_server --port 8765 --latency 0.3
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.llm_answers import audio_parts, count_tokens, eva_answer, good_answer, message_text, prompt_key

BEHAVIOURS = (
    "good",
    "bad_json",
    "missing_keys",
    "out_of_range",
    "unsure",
    "unsure_text",
    "slow",
    "rate_limited",
    "rate_limited_ms",
    "server_error",
    "always_500",
    "bad_request",
    "hang",
    "duplicate_key",
    "nan_rating",
    "uncertain_string",
    "hedged",
    "huge",
    "html_200",
)
HUGE_ANSWER_BYTES = 5 * 1024 * 1024
HTML_BODY = "<html><body><h1>502 Bad Gateway</h1><p>upstream judge unavailable</p></body></html>"
MARKER = re.compile(r"\[\[llm:([a-z0-9_]+)\]\]")
MODEL_ID = "tribunal-test-judge"
# How long a "hang" request waits at most when nobody closes it (the server stopping ends it at once).
HANG_LIMIT_S = 600.0

Responder = Callable[[dict[str, Any]], str]


class LLMTestServer:
    """State shared by the request handlers; one per running server."""

    def __init__(
        self,
        *,
        behaviour: str = "good",
        latency_s: float = 0.0,
        responder: Responder | None = None,
        slow_s: float = 1.0,
    ) -> None:
        self.set_behaviour(behaviour)
        self.latency_s = latency_s
        self.slow_s = slow_s
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.responses: list[tuple[dict[str, Any], str]] = []  # (request, answer text) of every 200
        self.request_times: list[float] = []
        # The decoded audio of each request that carried some: (format, bytes) per input_audio part.
        self.audio_received: list[list[tuple[str, bytes]]] = []
        self.base_url = ""
        self.stopping = threading.Event()
        self._seen: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def set_behaviour(self, name: str) -> None:
        if name not in BEHAVIOURS:
            raise ValueError(f"unknown behaviour {name!r}; known: {', '.join(BEHAVIOURS)}")
        self.behaviour = name

    def behaviour_for(self, body: dict[str, Any]) -> str:
        found = MARKER.search(message_text(body, role="user"))
        if found and found.group(1) in BEHAVIOURS:
            return found.group(1)
        return self.behaviour

    def record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)
            self.request_times.append(time.monotonic())

    def times_seen(self, behaviour: str, body: dict[str, Any]) -> int:
        """How many earlier requests with this prompt had this behaviour (0 the first time)."""
        key = (behaviour, prompt_key(body))
        with self._lock:
            seen = self._seen.get(key, 0)
            self._seen[key] = seen + 1
        return seen

    def answer_text(self, behaviour: str, body: dict[str, Any]) -> str:
        if behaviour == "bad_json":
            return '{"rating": 2, "explanation": "cut off mid-sentence'
        if behaviour == "missing_keys":
            return json.dumps({"explanation": "The answer has no rating."})
        if behaviour == "out_of_range":
            eva = eva_answer(body, rating=42)
            if eva is not None:
                return eva
            return json.dumps({"rating": 7, "explanation": "Far above the scale.", "failure_modes": [], "flags": []})
        if behaviour == "unsure":
            return json.dumps({"rating": None, "uncertain": True, "explanation": "I'm not sure how to rate this turn."})
        if behaviour == "unsure_text":
            return "I'm not sure. The transcript could be read either way."
        if behaviour == "duplicate_key":
            return '{"rating": 1, "rating": 3, "explanation": "Two ratings.", "failure_modes": []}'
        if behaviour == "nan_rating":
            return '{"rating": NaN, "explanation": "No number.", "failure_modes": []}'
        if behaviour == "uncertain_string":
            return json.dumps({"rating": 2, "uncertain": "true", "explanation": "Adequate.", "failure_modes": []})
        if behaviour == "hedged":
            return json.dumps({"rating": 2, "explanation": "I'm not sure, maybe 2?", "failure_modes": []})
        if behaviour == "huge":
            return "x" * HUGE_ANSWER_BYTES
        if self.responder is not None:
            return self.responder(body)
        return good_answer(body)


def _completion_json(body: dict[str, Any], text: str) -> dict[str, Any]:
    prompt_tokens = sum(
        count_tokens(m.get("content") if isinstance(m.get("content"), str) else "") for m in body.get("messages") or []
    )
    completion_tokens = max(1, count_tokens(text))
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or MODEL_ID,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
        "system_fingerprint": "tribunal-test",
    }


def _error_json(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body leave at once: no 40 ms delayed-ACK stall
    server_version = "TribunalTestLLM/1.0"
    state: LLMTestServer  # set on the subclass made per server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [{"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "tribunal"}],
                },
            )
            return
        self._send_json(404, _error_json(f"no route {self.path}", "invalid_request_error"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_json(404, _error_json(f"no route {self.path}", "invalid_request_error"))
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, _error_json("request body is not JSON", "invalid_request_error"))
            return
        state = self.state
        state.record(body)
        audio = audio_parts(body)
        if isinstance(audio, str):
            self._send_json(400, _error_json(audio, "invalid_request_error", "invalid_audio"))
            return
        if audio:
            with state._lock:
                state.audio_received.append(audio)
        behaviour = state.behaviour_for(body)

        if behaviour == "hang":
            # Hold the request until the client gives up (it closes the socket) or the server stops.
            state.stopping.wait(HANG_LIMIT_S)
            self.close_connection = True
            return

        if state.latency_s:
            state.stopping.wait(state.latency_s)
        if behaviour == "slow":
            state.stopping.wait(state.slow_s)

        if behaviour == "bad_request":
            self._send_json(400, _error_json("scripted bad request", "invalid_request_error", "bad_request"))
            return
        if behaviour == "always_500":
            self._send_json(500, _error_json("scripted server error", "server_error"))
            return
        if behaviour in ("rate_limited", "rate_limited_ms") and state.times_seen(behaviour, body) == 0:
            headers = {"Retry-After": "1"} if behaviour == "rate_limited" else {"retry-after-ms": "200"}
            self._send_json(429, _error_json("scripted rate limit", "requests", "rate_limit_exceeded"), headers)
            return
        if behaviour == "server_error" and state.times_seen(behaviour, body) == 0:
            self._send_json(500, _error_json("scripted server error, once", "server_error"))
            return

        if behaviour == "html_200":
            data = HTML_BODY.encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        text = state.answer_text(behaviour, body)
        with state._lock:
            state.responses.append((body, text))
        self._send_json(200, _completion_json(body, text))


class RunningServer:
    """What run_llm_server yields: the base URL, the requests received, and the behaviour switch."""

    def __init__(self, state: LLMTestServer, httpd: ThreadingHTTPServer) -> None:
        self._state = state
        self.httpd = httpd
        host, port = httpd.server_address[:2]
        self.host = str(host)
        self.port = int(port)
        self.base_url = f"http://{self.host}:{self.port}/v1"
        state.base_url = self.base_url

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self._state.requests

    @property
    def responses(self) -> list[tuple[dict[str, Any], str]]:
        return self._state.responses

    @property
    def request_times(self) -> list[float]:
        return self._state.request_times

    @property
    def audio_received(self) -> list[list[tuple[str, bytes]]]:
        return self._state.audio_received

    @property
    def state(self) -> LLMTestServer:
        return self._state

    def set_behaviour(self, name: str) -> None:
        self._state.set_behaviour(name)

    def set_latency(self, seconds: float) -> None:
        self._state.latency_s = seconds


class _QuietThreadingHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # A sweep opens a connection per call in flight at once (hundreds); socketserver's default
    # backlog of 5 drops most of their SYNs, and each dropped one waits a second to retry.
    request_queue_size = 1024

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._connections_lock = threading.Lock()
        self._connections: dict[Any, threading.Thread] = {}

    def process_request(self, request: Any, client_address: Any) -> None:
        # As ThreadingMixIn does, and each connection's socket and thread kept until it is done: a
        # client that keeps its connection open (an HTTP client's pool) would otherwise keep a
        # handler thread waiting for its next request after the server stopped, in the test process.
        thread = threading.Thread(target=self.process_request_thread, args=(request, client_address), daemon=True)
        with self._connections_lock:
            self._connections[request] = thread
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.pop(request, None)
        super().shutdown_request(request)

    def close_connections(self, timeout: float = 5.0) -> None:
        """End every open connection, and wait for its handler thread to finish."""
        with self._connections_lock:
            open_now = list(self._connections.items())
        for request, _ in open_now:
            with contextlib.suppress(OSError):
                request.shutdown(socket.SHUT_RDWR)
        for _, thread in open_now:
            thread.join(timeout)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out and closed its socket is expected here, not an error.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _make_httpd(state: LLMTestServer, host: str, port: int) -> _QuietThreadingHTTPServer:
    handler = type("_BoundHandler", (_Handler,), {"state": state})
    return _QuietThreadingHTTPServer((host, port), handler)


@contextlib.contextmanager
def run_llm_server(
    *,
    behaviour: str = "good",
    latency_s: float = 0.0,
    responder: Responder | None = None,
    slow_s: float = 1.0,
    host: str = "127.0.0.1",
    port: int = 0,
) -> Iterator[RunningServer]:
    """Serve on a free port of 127.0.0.1 in a background thread for the duration of the block."""
    state = LLMTestServer(behaviour=behaviour, latency_s=latency_s, responder=responder, slow_s=slow_s)
    httpd = _make_httpd(state, host, port)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield RunningServer(state, httpd)
    finally:
        state.stopping.set()  # releases hanging and sleeping handlers
        httpd.shutdown()
        httpd.close_connections()  # no handler thread outlives the server (a fork checks for others)
        httpd.server_close()
        thread.join(timeout=5)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Local OpenAI-compatible judge server for tests and benchmarks.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every answer")
    parser.add_argument("--behaviour", default="good", choices=BEHAVIOURS)
    parser.add_argument("--slow", type=float, default=1.0, help="extra seconds for the 'slow' behaviour")
    args = parser.parse_args(argv)
    state = LLMTestServer(behaviour=args.behaviour, latency_s=args.latency, slow_s=args.slow)
    httpd = _make_httpd(state, args.host, args.port)
    server = RunningServer(state, httpd)
    print(f"serving {args.behaviour} answers at {server.base_url} (latency {args.latency}s); Ctrl-C stops", flush=True)
    try:
        httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        state.stopping.set()
        httpd.server_close()


if __name__ == "__main__":
    main()
