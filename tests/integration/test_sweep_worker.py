"""A sweep through the real stack, with a crash in the middle.

PostgreSQL, Redis as broker, a real Celery worker process, and the real openai client talking over
HTTP to tests/llm_server.py. Some turns make the server answer badly. The worker is SIGKILLed while
the sweep runs and started again; afterwards every (target, judge version, run) has exactly one
verdict, and every bad answer is unresolved with its raw text.
"""

import pytest
from django.db import connection

from reviewapp.models import JudgeCall, Sweep, Verdict
from tests.integration.sweep_support import (
    TURNS,
    assert_each_owed_verdict_once,
    kill_mid_sweep,
    marker_for,
    start_sweep,
)


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
