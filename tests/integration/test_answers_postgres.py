"""Answers that must never be scored, and bodies PostgreSQL could not store, through the real stack:
a Celery worker process, Redis, PostgreSQL and the real openai client against tests/llm_server.py."""

import hashlib

import pytest
from django.db import connection

from reviewapp.corpus.services.imports import ImportFailed, dataset_import
from reviewapp.judging.services import calls
from reviewapp.judging.services.sweeps import sweep_start
from reviewapp.judging.tasks.sweeps import sweep_queue
from reviewapp.models import Conversation, Dataset, JudgeCall, ReviewItem, Sweep, Turn, Verdict
from scoring.llm import LLMReply
from tests.factories import store_judge
from tests.llm_server import HTML_BODY, HUGE_ANSWER_BYTES

R = ReviewItem.Reason
EXPECTED = {
    "hedged": (Verdict.Status.UNRESOLVED, "hedged", [R.UNRESOLVED, R.UNCERTAIN]),
    "uncertain_string": (Verdict.Status.UNRESOLVED, "uncertain", [R.UNRESOLVED, R.UNCERTAIN]),
    "duplicate_key": (Verdict.Status.UNRESOLVED, "duplicate_key", [R.UNRESOLVED]),
    "nan_rating": (Verdict.Status.UNRESOLVED, "non_finite", [R.UNRESOLVED]),
    "huge": (Verdict.Status.UNRESOLVED, "bad_json", [R.UNRESOLVED]),
    "html_200": (Verdict.Status.ERROR, "", [R.UNRESOLVED]),
    "good": (Verdict.Status.RESOLVED, "", None),
}


@pytest.mark.llm_server(env={"LLM_MAX_ATTEMPTS": "1"})
def test_bad_answers_are_unresolved_archived_and_queued_on_postgresql(llm_worker, wait_until):
    worker, _server = llm_worker
    assert connection.vendor == "postgresql"
    judge = store_judge("conciseness")
    dataset = Dataset.objects.create(name="bad-answers")
    for behaviour in EXPECTED:
        conversation = Conversation.objects.create(dataset=dataset, external_id=behaviour, language="en")
        Turn.objects.create(conversation=conversation, position=0, role=Turn.Role.USER, text="Hello?")
        Turn.objects.create(conversation=conversation, position=1, role=Turn.Role.AGENT, text=f"x [[llm:{behaviour}]]")

    sweep = sweep_start(dataset=dataset, judge_versions=[judge], qa_sample=0, dispatch=sweep_queue)
    wait_until(
        lambda: Sweep.objects.get(pk=sweep.pk).status == Sweep.Status.DONE,
        timeout=180,
        message=f"sweep {sweep.pk} to finish\n{worker.log_tail()}",
    )

    verdicts = {
        v.conversation.external_id: v
        for v in Verdict.objects.filter(sweep=sweep).select_related("conversation", "call")
    }
    for behaviour, (status, code, reasons) in EXPECTED.items():
        verdict = verdicts[behaviour]
        assert (verdict.status, verdict.problem_code) == (status, code), behaviour
        if status != Verdict.Status.RESOLVED:
            assert verdict.rating is None and verdict.passed is None
            assert verdict.raw_text, behaviour
        items = ReviewItem.objects.filter(turn_id=verdict.turn_id)
        assert (items.get().reasons if reasons else items.count()) == (reasons or 0), behaviour

    huge = verdicts["huge"].call
    assert (huge.response_bytes, huge.response_truncated) == (HUGE_ANSWER_BYTES, True)
    assert huge.response_sha256 == hashlib.sha256(b"x" * HUGE_ANSWER_BYTES).hexdigest()
    with connection.cursor() as cursor:
        cursor.execute("SELECT octet_length(raw_response) FROM reviewapp_judgecall WHERE id = %s", [huge.pk])
        assert cursor.fetchone()[0] == 256 * 1024
        cursor.execute("SELECT length(raw_text) FROM reviewapp_verdict WHERE id = %s", [verdicts["huge"].pk])
        assert cursor.fetchone()[0] < 4200
    html = verdicts["html_200"].call
    assert (html.raw_response, html.response_bytes) == (HTML_BODY, len(HTML_BODY))


@pytest.mark.django_db
def test_a_body_with_nul_and_surrogates_is_stored_by_postgresql():
    assert connection.vendor == "postgresql"
    judge = store_judge("conciseness")
    reply = LLMReply("", None, None, 1, 1, "the response is not JSON", body="a\x00b\ud83dc")
    call = calls.call_archive(judge_version=judge, sweep=None, system="", user="u", model="m", params={}, reply=reply)
    assert JudgeCall.objects.get(pk=call.pk).raw_response == "a\\u0000b\\ud83dc"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "line",
    [
        '{"external_id": "n", "turns": [{"role": "user", "text": "a\\u0000b"}]}',
        '{"external_id": "s", "turns": [{"role": "user", "text": "a\\udc00b"}]}',
        '{"external_id": "p", "turns": [{"position": 2147483648, "role": "user", "text": "x"}]}',
        '{"external_id": "' + "e" * 201 + '", "turns": [{"role": "user", "text": "x"}]}',
    ],
)
def test_input_postgresql_would_reject_is_refused_before_writing(tmp_path, line):
    path = tmp_path / "calls.jsonl"
    path.write_text('{"external_id": "ok", "turns": [{"role": "user", "text": "fine"}]}\n' + line + "\n", "utf-8")
    with pytest.raises(ImportFailed) as caught:
        dataset_import(path=path, fmt="auto")
    assert caught.value.summary.errors[0]["line"] == 2
    assert Conversation.objects.count() == 0 and Dataset.objects.count() == 0
