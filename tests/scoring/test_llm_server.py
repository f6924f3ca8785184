"""The local OpenAI-compatible test server itself: routes, scripted behaviours, shutdown."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.llm_answers import good_rating
from tests.llm_server import BEHAVIOURS, HTML_BODY, run_llm_server

PROJECT_DIR = Path(__file__).resolve().parents[2]


def _post(base_url: str, body: dict, timeout: float = 5.0) -> tuple[int, dict, dict]:
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = response.read()
            if response.headers.get("Content-Type") != "application/json":  # the html_200 behaviour
                return response.status, dict(response.headers), {"body": data.decode()}
            return response.status, dict(response.headers), json.loads(data)
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read())


def _body(user: str) -> dict:
    return {"model": "judge", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": user}]}


def test_models_route_lists_a_model():
    with run_llm_server() as server:
        assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")
        with urllib.request.urlopen(f"{server.base_url}/models", timeout=5) as response:
            payload = json.loads(response.read())
    assert payload["object"] == "list"
    assert payload["data"][0]["object"] == "model"


def test_good_answer_has_openai_shape_and_a_deterministic_rating():
    with run_llm_server() as server:
        status, _, first = _post(server.base_url, _body("same prompt"))
        _, _, second = _post(server.base_url, _body("same prompt"))
    assert status == 200
    assert first["object"] == "chat.completion"
    message = first["choices"][0]["message"]
    assert message["role"] == "assistant"
    answer = json.loads(message["content"])
    assert (
        answer["rating"]
        == good_rating(_body("same prompt"))
        == json.loads(second["choices"][0]["message"]["content"])["rating"]
    )
    assert answer["rating"] in (1, 2, 3)
    usage = first["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["prompt_tokens"] == 3  # "s", "same", "prompt"
    assert len(server.requests) == 2


def test_marker_overrides_the_default_and_set_behaviour_switches_it():
    with run_llm_server(behaviour="good") as server:
        status, _, payload = _post(server.base_url, _body("x [[llm:out_of_range]]"))
        assert status == 200
        assert json.loads(payload["choices"][0]["message"]["content"])["rating"] == 7
        server.set_behaviour("always_500")
        assert _post(server.base_url, _body("y"))[0] == 500
        with pytest.raises(ValueError):
            server.set_behaviour("no-such-behaviour")


def test_rate_limited_is_429_once_per_prompt_then_good():
    with run_llm_server(behaviour="rate_limited") as server:
        status, headers, payload = _post(server.base_url, _body("p1"))
        assert status == 429
        assert headers["Retry-After"] == "1"
        assert payload["error"]["code"] == "rate_limit_exceeded"
        assert _post(server.base_url, _body("p1"))[0] == 200
        assert _post(server.base_url, _body("p2"))[0] == 429  # another prompt: its own first time


def test_server_error_is_500_once_per_prompt():
    with run_llm_server(behaviour="server_error") as server:
        assert _post(server.base_url, _body("p"))[0] == 500
        assert _post(server.base_url, _body("p"))[0] == 200


def test_hang_does_not_block_shutdown():
    with run_llm_server(behaviour="hang") as server:
        outcome: list[str] = []

        def call():
            try:
                _post(server.base_url, _body("wait forever"), timeout=30)
                outcome.append("answered")
            except OSError as error:
                outcome.append(type(error).__name__)

        thread = threading.Thread(target=call, daemon=True)
        thread.start()
        time.sleep(0.3)
        assert thread.is_alive()  # no answer yet
        started = time.monotonic()
    # Leaving the block stopped the server although a request was still hanging.
    assert time.monotonic() - started < 3
    thread.join(timeout=5)
    assert outcome and outcome[0] != "answered"


def test_every_behaviour_answers_or_fails_in_its_own_way():
    expected_status = {
        "always_500": 500,
        "server_error": 500,
        "rate_limited": 429,
        "rate_limited_ms": 429,
        "bad_request": 400,
    }
    with run_llm_server(slow_s=0.05) as server:
        for behaviour in BEHAVIOURS:
            if behaviour == "hang":
                continue
            status, headers, payload = _post(server.base_url, _body(f"[[llm:{behaviour}]]"))
            assert status == expected_status.get(behaviour, 200), behaviour
            if behaviour == "html_200":
                assert headers["Content-Type"] == "text/html" and payload["body"] == HTML_BODY


def test_runs_as_a_module_with_port_and_latency():
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.llm_server", "--port", "0", "--latency", "0.2"],
        cwd=PROJECT_DIR,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        assert "serving good answers at http://127.0.0.1:" in line
        base_url = line.split(" at ")[1].split(" ")[0]
        started = time.monotonic()
        status, _, payload = _post(base_url, _body("hello"))
        assert status == 200
        assert time.monotonic() - started >= 0.2
        assert payload["choices"][0]["finish_reason"] == "stop"
    finally:
        process.terminate()
        process.wait(timeout=5)


def test_good_answers_fit_every_shipped_judge_so_the_local_endpoint_resolves():
    """`TRIBUNAL_LOCAL_LLM=1 make run` sweeps with this server: its good answers must parse as resolved
    for every shipped judge (binary 0/1, ordinal 1-3, weighted sub-metrics, rubric criteria)."""
    from pathlib import Path

    from scoring.parsing import parse_answer
    from scoring.specs import load_specs
    from tests.llm_answers import good_answer

    root = Path(__file__).resolve().parents[2]
    specs = {spec.key: spec for spec in load_specs(root / "judges")}
    prompts = json.loads((root / "tests/fixtures/judge_prompts_fr.json").read_text(encoding="utf-8"))
    seen_ratings: dict[str, set] = {}
    for key, renders in prompts.items():
        for prompt in renders:
            body = {
                "messages": [
                    {"role": "system", "content": prompt["system"]},
                    {"role": "user", "content": prompt["user"]},
                ]
            }
            result = parse_answer(specs[key], good_answer(body))
            assert result.status == "resolved", (key, result.problem)
            seen_ratings.setdefault(key, set()).add(result.rating)
    assert seen_ratings["speakability@1.0"] <= {0.0, 1.0}
    assert seen_ratings["conciseness@1.0"] <= {1.0, 2.0, 3.0}


def test_no_handler_thread_outlives_the_server_when_a_client_keeps_its_connection_open():
    """An HTTP client's pool keeps its connection open after a call; the server's handler thread
    would wait there for the next request after the server stopped, and a process with such a thread
    left behind cannot fork to read an import (reviewapp.idle_threads)."""
    import http.client

    def handlers() -> list[str]:
        return [thread.name for thread in threading.enumerate() if "process_request_thread" in thread.name]

    before = handlers()
    with run_llm_server() as server:
        host, port = server.base_url.split("//")[1].split("/")[0].split(":")
        client = http.client.HTTPConnection(host, int(port), timeout=5)  # HTTP/1.1: kept alive
        client.request("POST", "/v1/chat/completions", json.dumps(_body("hello")), {"Content-Type": "application/json"})
        assert client.getresponse().read()
        assert len(handlers()) == len(before) + 1  # its handler waits for the next request
    try:
        assert handlers() == before
    finally:
        client.close()
