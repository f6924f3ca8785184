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
