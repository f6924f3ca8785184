"""A sweep through the real stack, with a crash in the middle.

PostgreSQL, Redis as broker, a real Celery worker process, and the real openai client talking over
HTTP to tests/llm_server.py. Some turns make the server answer badly. The worker is SIGKILLed while
the sweep runs and started again; afterwards every (target, judge version, run) has exactly one
verdict, and every bad answer is unresolved with its raw text.
"""

from collections import Counter

import pytest
from django.db import connection

from reviewapp.judging.services.sweeps import sweep_start
from reviewapp.judging.tasks.sweeps import sweep_queue
from reviewapp.models import Conversation, Dataset, JudgeCall, JudgeVersion, Sweep, Turn, Verdict
from tests.factories import store_judge

TURNS = 300
REPEATS = 3
VARIANCE_SAMPLE = 0.2


def marker_for(number: int) -> str:
    if number % 10 == 3:
        return "[[llm:bad_json]]"
    if number % 15 == 4:
        return "[[llm:out_of_range]]"
    if number % 20 == 5:
        return "[[llm:unsure]]"
    if number % 25 == 6:
        return "[[llm:server_error]]"
    return ""


def make_corpus() -> Dataset:
    """One agent turn per conversation, so a marker only ever reaches its own turn's prompt."""
    dataset = Dataset.objects.create(name="worker-sweep")
    conversations = Conversation.objects.bulk_create(
        [Conversation(dataset=dataset, external_id=f"call-{n:04d}", language="en") for n in range(TURNS)]
    )
    turns = []
    for number, conversation in enumerate(conversations):
        turns.append(Turn(conversation=conversation, position=0, role=Turn.Role.USER, text=f"Question {number}?"))
        turns.append(
            Turn(
                conversation=conversation,
                position=1,
                role=Turn.Role.AGENT,
                text=f"Answer number {number}. {marker_for(number)}".strip(),
            )
        )
    Turn.objects.bulk_create(turns)
    return dataset


def start_sweep(*, qa_sample: float) -> tuple[JudgeVersion, Sweep, set[tuple[int, int]]]:
    """The shipped conciseness judge swept over make_corpus() on the worker: (version, sweep, the
    (turn id, run) pairs it owes: run 0 of every agent turn, every run of the variance sample)."""
    judge = store_judge("conciseness")
    sweep = sweep_start(
        dataset=make_corpus(),
        judge_versions=[judge],
        repeats=REPEATS,
        variance_sample=VARIANCE_SAMPLE,
        qa_sample=qa_sample,
        dispatch=sweep_queue,
    )
    sampled = set(sweep.params["variance_sample"]["turn"])
    assert len(sampled) == round(VARIANCE_SAMPLE * TURNS)
    expected = {(turn_id, 0) for turn_id in Turn.objects.filter(role="agent").values_list("id", flat=True)}
    expected |= {(turn_id, run) for turn_id in sampled for run in range(1, REPEATS)}
    return judge, sweep, expected


def kill_mid_sweep(worker, sweep: Sweep, expected: set, *, written: int, wait_until) -> None:
    """SIGKILL the worker once it has written `written` verdicts of the sweep, before it wrote them all."""
    written_before_kill = wait_until(
        lambda: Verdict.objects.filter(sweep=sweep).count() >= written and Verdict.objects.filter(sweep=sweep).count(),
        timeout=120,
        message="the worker to write its first verdicts",
    )
    worker.kill()
    assert written_before_kill < len(expected), "the sweep ended before the worker could be killed"


def assert_each_owed_verdict_once(sweep: Sweep, judge: JudgeVersion, expected: set) -> None:
    """Every (target, run) the sweep owes has exactly one verdict of the version, and the sweep counted them."""
    keys = list(Verdict.objects.filter(sweep=sweep, judge_version=judge).values_list("turn_id", "run_index"))
    doubled = [key for key, count in Counter(keys).items() if count > 1]
    assert doubled == []
    assert set(keys) == expected  # none lost, none extra
    assert sweep.verdicts_written == len(expected)
    assert sweep.total_targets == TURNS


@pytest.mark.llm_server(latency_s=0.05)
def test_sweep_survives_a_killed_worker_without_losing_or_doubling_verdicts(llm_worker, wait_until):
    worker, server = llm_worker
    assert connection.vendor == "postgresql"
    judge, sweep, expected = start_sweep(qa_sample=0.05)

    kill_mid_sweep(worker, sweep, expected, written=60, wait_until=wait_until)
    assert Sweep.objects.get(pk=sweep.pk).status == Sweep.Status.RUNNING
    worker.start()

    wait_until(
        lambda: Sweep.objects.get(pk=sweep.pk).status == Sweep.Status.DONE,
        timeout=240,
        message=f"sweep {sweep.pk} to finish after the restart\n{worker.log_tail()}",
    )
    sweep.refresh_from_db()

    assert_each_owed_verdict_once(sweep, judge, expected)
    assert sweep.tier1_resolved == 0 and sweep.escalated == TURNS

    verdicts = Verdict.objects.filter(sweep=sweep).select_related("turn", "call")
    unresolved_expected = {"[[llm:bad_json]]", "[[llm:out_of_range]]", "[[llm:unsure]]"}
    bad = 0
    for verdict in verdicts:
        marker = next((m for m in unresolved_expected if m in verdict.turn.text), None)
        if marker:
            bad += 1
            assert verdict.status == Verdict.Status.UNRESOLVED, (verdict.turn.text, verdict.explanation)
            assert verdict.rating is None and verdict.passed is None
            assert verdict.raw_text and verdict.raw_text == verdict.call.raw_response
        else:
            assert verdict.status == Verdict.Status.RESOLVED, (verdict.turn.text, verdict.explanation)
            assert verdict.rating in (1.0, 2.0, 3.0)
        assert verdict.call is not None and verdict.call.sweep_id == sweep.pk
    assert bad > 0
    retried = verdicts.filter(turn__text__contains="[[llm:server_error]]", run_index=0)
    # A 500 is answered once per prompt, then retried to a good answer (a call redone after the
    # crash may find the 500 already spent).
    assert retried.exists() and any(v.call.attempts >= 2 for v in retried)

    run0_unresolved = sum(1 for n in range(TURNS) if marker_for(n) in unresolved_expected)
    assert sweep.unresolved == run0_unresolved
    assert sweep.failed == 0
    # A chunk redelivered after the crash may repeat calls whose verdicts were not yet written, never more.
    assert JudgeCall.objects.filter(sweep=sweep).count() >= len(expected)
    assert len(server.requests) >= len(expected)  # every answer came over HTTP
    assert worker.kills >= 1
    assert sweep.params["triage"]["reasons"].get("unresolved") == run0_unresolved
