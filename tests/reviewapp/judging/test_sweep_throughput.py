"""What keeps a chunk cheap around its LLM calls: batched archiving and one thread pool per process."""

import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviewapp.judging.services import sweeps as sweeps_service
from reviewapp.judging.services.sweeps import VERDICT_FLUSH_EVERY, sweep_chunk_run, sweep_chunks, sweep_start
from reviewapp.models import JudgeCall, Verdict
from tests.factories import dataset_of_calls, store_judge
from tests.fake_llms import ScriptedLLM

pytestmark = pytest.mark.django_db


class ThreadRecordingLLM(ScriptedLLM):
    def __init__(self):
        super().__init__()
        self.threads: set[int] = set()

    def complete(self, **kwargs):
        with self._lock:
            self.threads.add(threading.get_ident())
        return super().complete(**kwargs)


def _planned(name: str, agent_turns: int):
    dataset = dataset_of_calls(name, {f"c{n:03d}": ("en", [f"Turn {n} of {name} [[r=2]]"]) for n in range(agent_turns)})
    judge_version = store_judge("conciseness")
    sweep = sweep_start(dataset=dataset, judge_versions=[judge_version], qa_sample=0, dispatch=False)
    return sweep, judge_version


def _run_all(sweep, client, threads=4):
    for judge_version_id, target_ids in sweep_chunks(sweep=sweep):
        sweep_chunk_run(
            sweep_id=sweep.pk, judge_version_id=judge_version_id, target_ids=target_ids, client=client, threads=threads
        )


def test_every_call_of_a_large_chunk_is_archived_and_linked_to_its_verdict(settings):
    sweep, judge_version = _planned("large", 3 * VERDICT_FLUSH_EVERY + 5)
    sweep.params = {**sweep.params, "chunk_size": 1000}
    sweep.save(update_fields=["params"])
    client = ScriptedLLM()

    _run_all(sweep, client)

    verdicts = list(
        Verdict.objects.filter(sweep=sweep).select_related("turn", "call__user_prompt", "call__system_prompt")
    )
    assert len(verdicts) == 3 * VERDICT_FLUSH_EVERY + 5 == len(client.calls)
    assert JudgeCall.objects.filter(sweep=sweep).count() == len(verdicts)
    for verdict in verdicts:
        assert (verdict.tier, verdict.status, verdict.rating) == ("llm", "resolved", 2.0)
        assert verdict.call.judge_version_id == judge_version.pk
        assert verdict.turn.text in verdict.call.user_prompt.text
        assert verdict.call.raw_response == verdict.raw_text
    # The system prompt is the same for every call: stored once.
    assert len({v.call.system_prompt_id for v in verdicts}) == 1


def test_archiving_costs_queries_per_batch_not_per_call():
    def queries_for(name: str, turns: int) -> int:
        sweep, _ = _planned(name, turns)
        sweep.params = {**sweep.params, "chunk_size": 1000}
        sweep.save(update_fields=["params"])
        client = ScriptedLLM()
        with CaptureQueriesContext(connection) as captured:
            _run_all(sweep, client)
        assert Verdict.objects.filter(sweep=sweep, call__isnull=False).count() == turns
        return len(captured)

    small = queries_for("small", 4)
    large = queries_for("large", 4 * VERDICT_FLUSH_EVERY)
    # Four batches more at most (each: prompts, read back, calls, verdicts, and its savepoint), and
    # a spare batch for answers that straddle the one-second flush.
    assert large <= small + 5 * 6


def test_chunks_share_one_thread_pool_per_process():
    sweep, _ = _planned("pool", 12)
    sweep.params = {**sweep.params, "chunk_size": 3}
    sweep.save(update_fields=["params"])
    client = ThreadRecordingLLM()

    _run_all(sweep, client, threads=2)

    assert len(client.calls) == 12
    assert Verdict.objects.filter(sweep=sweep).count() == 12
    # Four chunks ran through the same two threads instead of starting threads of their own.
    assert 1 <= len(client.threads) <= 2
    assert threading.get_ident() not in client.threads
    assert sweeps_service.llm_pool(2) is sweeps_service.llm_pool(2)
    assert sweeps_service.llm_pool(3) is not sweeps_service.llm_pool(2)


def test_the_chunk_is_woken_when_a_batch_of_answers_is_due_not_at_every_answer():
    from concurrent.futures import Future

    from reviewapp.judging.services.sweeps.llm_tier import _Answers

    futures = [Future() for _ in range(VERDICT_FLUSH_EVERY + 1)]
    answers = _Answers(len(futures))
    for future in futures[: VERDICT_FLUSH_EVERY - 1]:
        answers.add(future)
    assert answers.wait(0) is False
    answers.add(futures[VERDICT_FLUSH_EVERY - 1])
    assert answers.wait(0) is True
    assert answers.take() == futures[:VERDICT_FLUSH_EVERY]
    assert answers.wait(0) is False  # taken: nothing is due until the last answer comes
    answers.add(futures[-1])
    assert answers.wait(0) is True
    assert answers.take() == futures[-1:]
    assert _Answers(0).wait(0) is True  # a chunk with no calls waits for nothing


def _counters(sweep) -> tuple[int, ...]:
    sweep.refresh_from_db()
    return (sweep.verdicts_written, sweep.tier1_resolved, sweep.escalated, sweep.unresolved, sweep.failed)


def _recounted(sweep) -> tuple[int, ...]:
    counts = sweeps_service.sweep_counts(sweep=sweep)
    return (counts.verdicts_written, counts.tier1_resolved, counts.escalated, counts.unresolved, counts.failed)


def test_counters_move_with_each_write_and_a_chunks_end_counts_only_once_run_0_is_complete(monkeypatch):
    from reviewapp.judging.services.sweeps import finish

    sweep, _ = _planned("counters", 10)
    sweep.params = {**sweep.params, "chunk_size": 3}
    sweep.save(update_fields=["params"])
    chunks = sweep_chunks(sweep=sweep)
    assert len(chunks) == 4
    client = ScriptedLLM()
    counted = []
    real_counts = finish.sweep_counts

    def finalize_counting():
        monkeypatch.setattr(finish, "sweep_counts", lambda **kw: counted.append(1) or real_counts(**kw))
        try:
            return sweeps_service.sweep_finalize(sweep_id=sweep.pk, recount=False)
        finally:
            monkeypatch.setattr(finish, "sweep_counts", real_counts)

    for judge_version_id, target_ids in chunks[:3]:
        sweep_chunk_run(sweep_id=sweep.pk, judge_version_id=judge_version_id, target_ids=target_ids, client=client)
        assert _counters(sweep) == _recounted(sweep)  # kept exact on write, nothing recounted them
        closed = finalize_counting()
        assert (closed.closed, closed.status, counted) == (False, "pending", [])  # planned, not closed
    assert _counters(sweep) == (9, 0, 9, 0, 0)

    judge_version_id, target_ids = chunks[3]
    sweep_chunk_run(sweep_id=sweep.pk, judge_version_id=judge_version_id, target_ids=target_ids, client=client)
    closed = finalize_counting()
    assert (closed.closed, closed.status, len(counted)) == (True, "done", 1)
    assert _counters(sweep) == (10, 0, 10, 0, 0)


def test_drifted_counters_never_close_a_sweep_early_and_short_ones_leave_the_close_to_a_recount():
    sweep, _ = _planned("drift", 6)
    sweep.params = {**sweep.params, "chunk_size": 3}
    sweep.save(update_fields=["params"])
    (jv_id, first), (_, second) = sweep_chunks(sweep=sweep)
    client = ScriptedLLM()
    sweep_chunk_run(sweep_id=sweep.pk, judge_version_id=jv_id, target_ids=first, client=client)

    # Counters saying "complete" on a half-done sweep: the close recounts, stays open, and fixes them.
    type(sweep).objects.filter(pk=sweep.pk).update(escalated=6, verdicts_written=6)
    finalized = sweeps_service.sweep_finalize(sweep_id=sweep.pk, recount=False)
    assert (finalized.closed, finalized.status) == (False, "pending")
    assert _counters(sweep) == (3, 0, 3, 0, 0)

    # Counters short of the truth on a complete sweep: a chunk's end leaves it; a recount closes it.
    sweep_chunk_run(sweep_id=sweep.pk, judge_version_id=jv_id, target_ids=second, client=client)
    type(sweep).objects.filter(pk=sweep.pk).update(escalated=2)
    assert sweeps_service.sweep_finalize(sweep_id=sweep.pk, recount=False).closed is False
    finalized = sweeps_service.sweep_finalize(sweep_id=sweep.pk)
    assert (finalized.closed, finalized.status) == (True, "done")
    assert _counters(sweep) == (6, 0, 6, 0, 0)
