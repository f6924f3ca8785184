"""The client keeps the HTTP body whenever it held no answer, so the archive can store it."""

from __future__ import annotations

import json

import pytest

from scoring.llm import LLMClient, reply_from_completion
from tests.llm_server import HTML_BODY, HUGE_ANSWER_BYTES, run_llm_server


@pytest.fixture(scope="module")
def client():
    with run_llm_server() as server:
        llm = LLMClient(base_url=server.base_url, api_key="k", timeout_s=20.0, max_attempts=1)
        yield llm
        llm.close()


def ask(client, behaviour):
    return client.complete(model="m", system="", user=f"rate [[llm:{behaviour}]]")


def test_a_non_json_200_keeps_its_body(client):
    reply = ask(client, "html_200")
    assert (reply.text, reply.error, reply.body) == ("", "the response is not JSON", HTML_BODY)


def test_an_error_status_keeps_its_body(client):
    reply = ask(client, "always_500")
    assert reply.error.startswith("HTTP 500")
    assert json.loads(reply.body)["error"]["message"] == "scripted server error"


def test_a_good_answer_has_no_separate_body(client):
    reply = ask(client, "good")
    assert reply.ok and reply.body == ""


def test_a_5mb_answer_comes_back_whole(client):
    reply = ask(client, "huge")
    assert reply.ok and len(reply.text) == HUGE_ANSWER_BYTES


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b"[1, 2]", "the response is not a chat completion"),
        (b'{"choices": []}', "the response has no message text"),
        (b"\xff\xfe not utf-8", "the response is not JSON"),
    ],
)
def test_bodies_without_an_answer_are_kept(content, error):
    reply = reply_from_completion(content, latency_ms=1, attempts=1)
    assert reply.error == error
    assert reply.body == content.decode("utf-8", errors="replace")
