"""Every HTTP body archived and capped, long answers stored once and shown folded, and answers that
hedge, repeat a key or hold NaN ending unresolved (or uncertain) with their raw text - over real HTTP
through the real openai client against tests/llm_server.py."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.urls import reverse

from reviewapp.corpus.services.imports import dataset_import
from reviewapp.judging.services import calls
from reviewapp.models import Dataset, JudgeCall, ReviewItem, Verdict
from reviewapp.triage.services.queue_items import dataset_triage
from scoring.llm import LLMClient, LLMReply
from tests.factories import dataset_of_calls, store_judge
from tests.llm_server import HTML_BODY, HUGE_ANSWER_BYTES

pytestmark = pytest.mark.django_db
R = ReviewItem.Reason


def _sweep(run_sweep, behaviours: list[str]):
    judge = store_judge("conciseness")
    dataset = dataset_of_calls("answers", {b: ("en", [f"agent text [[llm:{b}]]"]) for b in behaviours})
    run_sweep(dataset=dataset, judge_versions=[judge], qa_sample=0)
    verdicts = Verdict.objects.filter(turn__isnull=False).select_related("turn", "call")
    return {v.conversation.external_id: v for v in verdicts.select_related("conversation")}


EXPECTED = {
    # behaviour: (status, problem code, raw text contains, triage reasons)
    "hedged": ("unresolved", "hedged", "I'm not sure, maybe 2?", [R.UNRESOLVED, R.UNCERTAIN]),
    "uncertain_string": ("unresolved", "uncertain", '"uncertain": "true"', [R.UNRESOLVED, R.UNCERTAIN]),
    "duplicate_key": ("unresolved", "duplicate_key", '"rating": 1, "rating": 3', [R.UNRESOLVED]),
    "nan_rating": ("unresolved", "non_finite", '"rating": NaN', [R.UNRESOLVED]),
    "unsure": ("unresolved", "uncertain", '"uncertain": true', [R.UNRESOLVED, R.UNCERTAIN]),
    "bad_json": ("unresolved", "bad_json", "cut off mid-sentence", [R.UNRESOLVED]),
}


def test_bad_answers_end_unresolved_with_their_raw_text_and_code(endpoint, run_sweep):
    verdicts = _sweep(run_sweep, [*EXPECTED, "good"])

    for behaviour, (status, code, raw, reasons) in EXPECTED.items():
        verdict = verdicts[behaviour]
        assert (verdict.status, verdict.problem_code) == (status, code), behaviour
        assert (verdict.rating, verdict.passed, verdict.label) == (None, None, ""), behaviour
        assert raw in verdict.raw_text, behaviour
        assert verdict.call.raw_response == verdict.raw_text, behaviour
        item = ReviewItem.objects.get(turn=verdict.turn)
        assert item.reasons == reasons, behaviour
    good = verdicts["good"]
    assert (good.status, good.problem_code) == ("resolved", "")
    assert not ReviewItem.objects.filter(turn=good.turn).exists()


def test_a_non_json_200_body_is_archived_as_received(endpoint, run_sweep):
    verdict = _sweep(run_sweep, ["html_200"])["html_200"]

    assert verdict.status == Verdict.Status.ERROR
    assert "the response is not JSON" in verdict.explanation
    call = verdict.call
    assert call.raw_response == HTML_BODY
    assert call.response_bytes == len(HTML_BODY.encode())
    assert call.response_sha256 == hashlib.sha256(HTML_BODY.encode()).hexdigest()
    assert call.response_truncated is False
    assert verdict.raw_text == HTML_BODY


def test_an_error_status_body_is_archived(endpoint, judge_version_for_calls):
    client = LLMClient(base_url=endpoint.base_url, api_key="test", timeout_s=5.0, max_attempts=1)
    try:
        reply = client.complete(model="m", system="", user="rate [[llm:always_500]]")
    finally:
        client.close()
    assert reply.error.startswith("HTTP 500")
    call = calls.call_archive(
        judge_version=judge_version_for_calls, sweep=None, system="", user="u", model="m", params={}, reply=reply
    )
    assert "scripted server error" in call.raw_response
    assert call.response_bytes == len(reply.body.encode())


@pytest.fixture
def judge_version_for_calls():
    return store_judge("conciseness")


def test_a_5mb_answer_is_capped_in_the_archive_and_stored_once(endpoint, run_sweep, settings):
    settings.JUDGE_CALL_BODY_CAP_BYTES = 256 * 1024
    settings.VERDICT_RAW_TEXT_MAX_CHARS = 4000
    verdict = _sweep(run_sweep, ["huge"])["huge"]
    full = "x" * HUGE_ANSWER_BYTES

    call = verdict.call
    assert call.response_bytes == HUGE_ANSWER_BYTES
    assert call.response_sha256 == hashlib.sha256(full.encode()).hexdigest()
    assert call.response_truncated is True
    assert len(call.raw_response.encode()) == 256 * 1024
    # The verdict keeps a marked excerpt, not a second copy.
    assert verdict.raw_text.startswith("x" * 4000)
    assert "[cut: the first 4,000 of 5,242,880 characters" in verdict.raw_text
    assert len(verdict.raw_text) < 4200
    assert (verdict.status, verdict.problem_code) == ("unresolved", "bad_json")


def test_a_page_with_a_5mb_answer_stays_small_and_folds_it(endpoint, run_sweep, make_user, client):
    verdict = _sweep(run_sweep, ["huge"])["huge"]
    client.force_login(make_user("lead-a", role="lead"))

    response = client.get(reverse("conversation_detail", args=[verdict.conversation_id]))

    assert response.status_code == 200
    body = response.content.decode()
    assert len(response.content) < 200_000
    assert "[cut: the first 4,000 of 5,242,880 characters" in body
    assert '<details class="fold"><summary>Raw answer</summary>' in body


def test_received_fields_cut_on_a_character_boundary(settings):
    settings.JUDGE_CALL_BODY_CAP_BYTES = 10
    reply = LLMReply("ééééééé", None, None, 1, 1, "")  # 14 bytes: the cap falls inside no character
    fields = calls.received_fields(reply)
    assert fields["raw_response"] == "ééééé"
    assert (fields["response_bytes"], fields["response_truncated"]) == (14, True)
    assert fields["response_sha256"] == hashlib.sha256("ééééééé".encode()).hexdigest()


def test_nul_and_lone_surrogates_in_a_body_are_stored_escaped():
    fields = calls.received_fields(LLMReply("", None, None, 1, 1, "not JSON", body="a\x00b\ud800c"))
    assert fields["raw_response"] == "a\\u0000b\\ud800c"
    assert fields["response_bytes"] == len("a\x00b\ud800c".encode("utf-8", "surrogatepass"))


def test_archive_keeps_body_fields_through_call_archive(judge_version_for_calls):
    reply = LLMReply("", None, None, 3, 1, "the response is not JSON", body="<p>oops</p>")
    call = calls.call_archive(
        judge_version=judge_version_for_calls, sweep=None, system="s", user="u", model="m", params={}, reply=reply
    )
    call = JudgeCall.objects.get(pk=call.pk)
    assert (call.raw_response, call.response_bytes, call.error) == ("<p>oops</p>", 11, "the response is not JSON")


def test_imported_unresolved_answers_that_hedge_are_queued_as_uncertain(tmp_path):
    def verdict(raw_text: str) -> dict:
        return {"judge": "conciseness", "version": "v1", "status": "unresolved", "raw_text": raw_text}

    records = [
        {
            "external_id": "hedge",
            "turns": [{"role": "agent", "text": "a", "verdicts": [verdict("Hard to say, maybe 2?")]}],
        },
        {"external_id": "plain", "turns": [{"role": "agent", "text": "b", "verdicts": [verdict("{oops")]}]},
    ]
    path = tmp_path / "imported.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    dataset_import(path=path, fmt="jsonl")

    codes = dict(Verdict.objects.values_list("conversation__external_id", "problem_code"))
    assert codes == {"hedge": "hedged", "plain": ""}
    dataset_triage(dataset=Dataset.objects.get(), qa_rate=0)
    reasons = dict(ReviewItem.objects.values_list("conversation__external_id", "reasons"))
    assert reasons == {"hedge": [R.UNRESOLVED, R.UNCERTAIN], "plain": [R.UNRESOLVED]}
