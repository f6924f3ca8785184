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
import base64
import binascii
import contextlib
import hashlib
import json
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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
# Audio formats an audio-capable chat model takes in an `input_audio` content part.
AUDIO_FORMATS = ("wav", "mp3")
# How long a "hang" request waits at most when nobody closes it (the server stopping ends it at once).
HANG_LIMIT_S = 600.0

Responder = Callable[[dict[str, Any]], str]


def _prompt_key(body: dict[str, Any]) -> str:
    """A stable hash of the messages, so scripted "first time" behaviours are per prompt."""
    messages = body.get("messages") or []
    canonical = json.dumps(messages, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _text(body: dict[str, Any], *, role: str | None = None) -> str:
    """The text of the request's messages (only the `role` ones when given), string or content parts."""
    parts = []
    for message in body.get("messages") or []:
        if role is not None and message.get("role") != role:
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(chunk.get("text", "")) for chunk in content if isinstance(chunk, dict))
    return "\n".join(parts)


def audio_parts(body: dict[str, Any]) -> list[tuple[str, bytes]] | str:
    """(format, decoded bytes) of every `input_audio` part of the messages, or the reason the request
    is malformed (a real endpoint answers 400 to those): no data, not base64, an unknown format."""
    found: list[tuple[str, bytes]] = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "input_audio":
                continue
            if message.get("role") != "user":
                return "input_audio is only accepted in user messages"
            audio = part.get("input_audio")
            if not isinstance(audio, dict) or not isinstance(audio.get("data"), str) or not audio["data"]:
                return "input_audio.data must be a non-empty base64 string"
            if audio.get("format") not in AUDIO_FORMATS:
                return f"input_audio.format must be one of {', '.join(AUDIO_FORMATS)}"
            try:
                data = base64.b64decode(audio["data"], validate=True)
            except (binascii.Error, ValueError):
                return "input_audio.data is not valid base64"
            found.append((audio["format"], data))
    return found


def _count_tokens(text: str) -> int:
    # Whitespace words are a fair stand-in for tokens: deterministic and proportional to length.
    return len(text.split())


# The answer format a judge prompt asks for, e.g. `"rating": 0 | 1` or `"language_match": 0-100`.
RATING_CHOICES = re.compile(r'"rating":\s*(\d+(?:\s*\|\s*\d+)+)')
SUB_SCORE = re.compile(r'"(\w+)":\s*0-100')
CRITERION = re.compile(r'"(\w+)":\s*\{+(?:"score"|\.\.\.)')


def good_rating(body: dict[str, Any]) -> int:
    """The rating a "good" answer gives: one of the values the prompt offers (`"rating": 0 | 1`),
    1..3 when it names none, picked from a hash of the prompt so the same prompt gets the same answer."""
    found = RATING_CHOICES.search(_text(body))
    choices = [int(v) for v in found.group(1).split("|")] if found else [1, 2, 3]
    return choices[int(_prompt_key(body)[:8], 16) % len(choices)]


# --- EVA's judges (configs/prompts/judge.yaml): one entry per turn, or nested dimensions -------------

EVA_RATING = re.compile(r'"rating":\s*<([^>]*)>')
EVA_BLOCK = re.compile(r"^Turn (\d+):\n((?:  .*\n?)*)", re.MULTILINE)
EVA_SPEAKABILITY = re.compile(r"^\[Turn (\d+)\]$", re.MULTILINE)
EVA_LINE = re.compile(r"^Turn (\d+): (.*)$", re.MULTILINE)
EVA_REDACTED = re.compile(r"^Turn (\d+) - \[Assistant speaks\]$", re.MULTILINE)
EVA_PAIR = re.compile(r'^Turn (\d+):\nExpected: "(.*)"\nTranscribed: "(.*)"$', re.MULTILINE)
EVA_DIMENSION = re.compile(r'"(\w+)":\s*\{\s*"(evidence|analysis)"')


def is_eva_prompt(text: str) -> bool:
    rated = bool(EVA_RATING.search(text))
    per_turn = '"turn_id"' in text and (rated or '"entities"' in text)
    return per_turn or (rated and ('"dimensions"' in text or "corruption_analysis" in text))


def _eva_choices(text: str) -> list[int]:
    found = EVA_RATING.search(text)
    digits = sorted({int(d) for d in re.findall(r"\b(\d)\b", found.group(1))}) if found else []
    return digits or [1, 2, 3]


def _pick(choices: list[int], *keys: str) -> int:
    digest = hashlib.sha256("\x1f".join(keys).encode("utf-8")).hexdigest()
    return choices[int(digest[:8], 16) % len(choices)]


def eva_turn_ids(text: str) -> tuple[list[int], set[int]]:
    """(every turn id the prompt shows, the ids with content the judge rates)."""
    pairs = EVA_PAIR.findall(text)
    if pairs:
        ids = [int(t) for t, _, _ in pairs]
        return ids, set(ids)
    blocks = EVA_BLOCK.findall(text)
    if blocks:
        ids = [int(t) for t, _ in blocks]
        return ids, {int(t) for t, body in blocks if "  assistant:" in body}
    for pattern in (EVA_SPEAKABILITY, EVA_REDACTED, EVA_LINE):
        found = [int(m.group(1)) for m in pattern.finditer(text)]
        if found:
            ids = list(dict.fromkeys(found))
            return ids, set(ids)
    return [], set()


def eva_answer(body: dict[str, Any], *, rating: int | None = None) -> str | None:
    """The answer an EVA judge gives to an EVA prompt, or None when the prompt is not one of EVA's.

    Per-turn prompts get one entry per turn id (null for turns without rated content); the speech
    judges' entries are wrapped in {"turns": [...]}; faithfulness-style prompts get their nested
    dimensions. Ratings are picked from the scale the prompt states, by a hash of prompt and turn.
    `rating` forces every rating (e.g. 42 for an out-of-range answer).
    """
    text = _text(body)
    if not is_eva_prompt(text):
        return None
    choices = _eva_choices(text)
    key = _prompt_key(body)
    if '"turn_id"' in text:
        ids, rated = eva_turn_ids(text)
        pairs = {int(t): (said, heard) for t, said, heard in EVA_PAIR.findall(text)}
        entries: list[dict[str, Any]] = []
        for turn_id in ids:
            value = (rating if rating is not None else _pick(choices, key, str(turn_id))) if turn_id in rated else None
            entry: dict[str, Any] = {"turn_id": turn_id}
            if turn_id in pairs:
                said, heard = pairs[turn_id]
                entry["entities"] = [
                    {
                        "type": "utterance",
                        "value": said,
                        "transcribed_value": heard,
                        "analysis": "compared as a whole",
                        "correct": said.strip().lower() == heard.strip().lower(),
                        "skipped": False,
                    }
                ]
                entry["summary"] = "One entity checked."
            else:
                entry["explanation"] = "" if value is None else f"Turn {turn_id} reads as a {value}."
                if '"failure_modes"' in text:
                    entry["failure_modes"] = []
                entry["rating"] = value
            entries.append(entry)
        return json.dumps({"turns": entries} if '"turns": [' in text else entries)
    overall = rating if rating is not None else _pick(choices, key)
    field_name = "corruption_analysis" if "corruption_analysis" in text else "dimensions"
    names = list(dict.fromkeys(name for name, _ in EVA_DIMENSION.findall(text)))
    dims: dict[str, Any] = {}
    for name in names:
        if field_name == "dimensions":
            dims[name] = {"evidence": f"{name} checked.", "flagged": overall < max(choices), "rating": overall}
        else:
            dims[name] = {"analysis": f"{name} checked.", "detected": overall == 0}
    return json.dumps({field_name: dims, "rating": overall})


def good_answer(body: dict[str, Any]) -> str:
    """A well-formed answer in the shape the judge's prompt asks for: a rating, weighted sub-scores
    (`"name": 0-100`) or rubric criteria (`"name": {"score": 0 | 1 ...}`), deterministic per prompt;
    EVA's prompts get EVA's shapes (see eva_answer)."""
    eva = eva_answer(body)
    if eva is not None:
        return eva
    text = _text(body)
    seed = int(_prompt_key(body)[8:16], 16)
    answer: dict[str, Any] = {"failure_modes": [], "flags": []}
    if '"sub_scores"' in text and (names := SUB_SCORE.findall(text)):
        answer["sub_scores"] = {name: 60 + (seed >> i) % 41 for i, name in enumerate(dict.fromkeys(names))}
        answer["explanation"] = "Scored each sub-metric of this judge."
    elif '"criteria"' in text and (names := CRITERION.findall(text)):
        met = {name: bool((seed >> i) % 4) for i, name in enumerate(dict.fromkeys(names))}
        answer["criteria"] = {name: {"score": int(ok), "passed": ok} for name, ok in met.items()}
        answer["explanation"] = "Checked every rubric item."
    else:
        rating = good_rating(body)
        answer = {
            "rating": rating,
            "explanation": f"The turn reads as a {rating} on this judge's scale.",
            "failure_modes": [],
            "flags": [],
        }
    return json.dumps(answer)


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
        found = MARKER.search(_text(body, role="user"))
        if found and found.group(1) in BEHAVIOURS:
            return found.group(1)
        return self.behaviour

    def record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)
            self.request_times.append(time.monotonic())

    def times_seen(self, behaviour: str, body: dict[str, Any]) -> int:
        """How many earlier requests with this prompt had this behaviour (0 the first time)."""
        key = (behaviour, _prompt_key(body))
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
        _count_tokens(m.get("content") if isinstance(m.get("content"), str) else "") for m in body.get("messages") or []
    )
    completion_tokens = max(1, _count_tokens(text))
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

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out and closed its socket is expected here, not an error.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _make_httpd(state: LLMTestServer, host: str, port: int) -> ThreadingHTTPServer:
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
