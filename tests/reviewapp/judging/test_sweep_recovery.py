"""Sweeps that recover: stalled sweeps are found, their unfinished chunks re-sent once, idempotently."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from reviewapp.judging.services import sweeps as sweeps_service
from reviewapp.judging.services.sweeps import recovery
from reviewapp.judging.services.sweeps.verdicts import write_verdicts
from reviewapp.judging.tasks.sweeps import sweeps_reconcile
from reviewapp.models import JudgeCall, PromptText, Sweep, Turn, Verdict
from tests import factories
from tests.factories import dataset_of_calls, store_judge

pytestmark = pytest.mark.django_db


@pytest.fixture
def planned(llm_off, settings, monkeypatch):
    """A sweep of 7 turns in chunks of 3, dispatched, whose first chunk ran before its worker died."""
    monkeypatch.setattr(sweeps_service.plan, "CHUNK_SIZE", 3)
    dataset = dataset_of_calls("calls", {f"c{i}": ("en", [f"answer {i}"]) for i in range(7)})
    judge = store_judge("conciseness")
    sweep = sweeps_service.sweep_start(dataset=dataset, judge_versions=[judge], qa_sample=0, dispatch=False)
    chunks = sweeps_service.sweep_chunks(sweep=sweep)
    assert [len(ids) for _, ids in chunks] == [3, 3, 1]
    sweeps_service.sweep_mark_running(sweep_id=sweep.pk)
    sweeps_service.sweep_mark_dispatched(sweep_id=sweep.pk, chunks=len(chunks))
    sweeps_service.sweep_chunk_run(sweep_id=sweep.pk, judge_version_id=judge.pk, target_ids=chunks[0][1])
    return sweep, chunks


def age(sweep, seconds):
    """Move every sign of life of `sweep` `seconds` into the past."""
    past = timezone.now() - timedelta(seconds=seconds)
    Sweep.objects.filter(pk=sweep.pk).update(created_at=past, started_at=past, progress_at=past)
    Verdict.objects.filter(sweep=sweep).update(created_at=past)


def test_a_sweep_with_recent_life_is_not_stalled(planned):
    sweep, _ = planned
    assert sweeps_service.sweeps_stalled() == []
    age(sweep, settings.TRIBUNAL_SWEEP_STALL_SECONDS - 5)
    assert sweeps_service.sweeps_stalled() == []


def test_writing_verdicts_is_a_sign_of_life(planned, django_assert_num_queries):
    """A chunk that writes verdicts without a heartbeat keeps its sweep alive; the check reads only
    the sweep rows (never a sort of the sweep's verdicts, a million of them in a large sweep)."""
    sweep, chunks = planned
    judge_version_id = chunks[1][0]
    age(sweep, settings.TRIBUNAL_SWEEP_STALL_SECONDS + 1)
    with django_assert_num_queries(1):
        assert sweeps_service.sweeps_stalled() == [sweep.pk]
    written = Verdict.objects.filter(sweep=sweep).first()
    write_verdicts(
        [
            Verdict(
                sweep=sweep,
                judge_version_id=judge_version_id,
                conversation_id=written.conversation_id,
                turn_id=written.turn_id,
                run_index=1,
                tier=Verdict.Tier.LLM,
                status=Verdict.Status.RESOLVED,
            )
        ]
    )
    assert sweeps_service.sweeps_stalled() == []
    sweep.refresh_from_db()
    assert timezone.now() - sweep.progress_at < timedelta(seconds=5)


def test_a_silent_sweep_gets_only_its_unfinished_chunks_back_once(planned):
    sweep, chunks = planned
    age(sweep, settings.TRIBUNAL_SWEEP_STALL_SECONDS + 1)
    assert sweeps_service.sweeps_stalled() == [sweep.pk]
    plan = sweeps_service.sweep_reconcile(sweep_id=sweep.pk)
    assert plan.chunks == chunks[1:] and not plan.redispatch and not plan.finalize
    # Marked: a second reconcile right after re-sends nothing.
    assert sweeps_service.sweeps_stalled() == []
    assert sweeps_service.sweep_reconcile(sweep_id=sweep.pk).chunks == []
    sweep.refresh_from_db()
    assert (sweep.params["reconciled"], sweep.params["resent_chunks"]) == (1, 2)


def test_the_beat_task_finishes_a_stalled_sweep_with_every_target_once(planned, eager_celery):
    sweep, chunks = planned
    age(sweep, settings.TRIBUNAL_SWEEP_STALL_SECONDS + 1)
    assert sweeps_reconcile() == {str(sweep.pk): 2}
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.DONE
    turn_ids = sorted(Verdict.objects.filter(sweep=sweep).values_list("turn_id", flat=True))
    assert turn_ids == sorted(t for _, ids in chunks for t in ids)
    # Nothing left to do: a later stall check finds the sweep done.
    assert sweeps_reconcile() == {}


def test_a_sweep_whose_dispatch_was_lost_is_dispatched_again(llm_off, eager_celery):
    dataset = dataset_of_calls("calls", {"c1": ("en", ["answer"])})
    judge = store_judge("conciseness")
    sweep = sweeps_service.sweep_start(dataset=dataset, judge_versions=[judge], qa_sample=0, dispatch=False)
    age(sweep, settings.TRIBUNAL_SWEEP_STALL_SECONDS + 1)
    assert sweeps_service.sweep_reconcile(sweep_id=sweep.pk).redispatch
    age(sweep, 2 * settings.TRIBUNAL_SWEEP_STALL_SECONDS + 1)  # a second reconcile waits twice as long
    sweeps_reconcile()
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.DONE and sweep.verdicts_written == 1


def test_recovery_defaults_are_sized_to_the_longest_chunk():
    # Defaults: chunks of 128 on 128 threads go out in 1 wave of at most 4 attempts x 60 s (floor: 300 s).
    assert max(300, 1 * 4 * 60) == 300 == settings.TRIBUNAL_SWEEP_CHUNK_SOFT_LIMIT
    assert settings.TRIBUNAL_SWEEP_CHUNK_TIME_LIMIT == settings.TRIBUNAL_SWEEP_CHUNK_SOFT_LIMIT + 60
    schedule = settings.CELERY_BEAT_SCHEDULE["sweeps-reconcile"]
    assert schedule["task"] == "reviewapp.judging.tasks.sweeps.sweeps_reconcile"
    assert schedule["schedule"] + settings.TRIBUNAL_SWEEP_STALL_SECONDS <= 90


def test_a_copy_of_a_running_chunk_does_nothing_until_its_lease_expires(planned, eager_celery):
    from reviewapp.judging.tasks.sweeps import sweep_chunk
    from reviewapp.models import SweepChunkLease

    sweep, chunks = planned
    judge_version_id, target_ids = chunks[1]
    holder = sweeps_service.chunk_lease_acquire(
        sweep_id=sweep.pk, judge_version_id=judge_version_id, target_ids=target_ids
    )
    assert holder is not None
    assert (
        sweeps_service.chunk_lease_acquire(sweep_id=sweep.pk, judge_version_id=judge_version_id, target_ids=target_ids)
        is None
    )
    copy = sweep_chunk.delay(sweep.pk, judge_version_id, target_ids).get()
    assert copy["skipped"] == len(target_ids) and copy["llm_verdicts"] == 0
    assert not Verdict.objects.filter(sweep=sweep, turn_id__in=target_ids).exists()
    # The holder's worker died: its lease runs out and the re-sent chunk takes over.
    SweepChunkLease.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    done = sweep_chunk.delay(sweep.pk, judge_version_id, target_ids).get()
    assert done["llm_verdicts"] == len(target_ids)
    assert not SweepChunkLease.objects.filter(sweep=sweep).exclude(holder=holder).exists()  # released


def test_each_reconcile_of_the_same_sweep_waits_twice_as_long(planned):
    sweep, _ = planned
    stall = settings.TRIBUNAL_SWEEP_STALL_SECONDS
    age(sweep, stall + 1)
    assert sweeps_service.sweep_reconcile(sweep_id=sweep.pk).chunks
    age(sweep, stall + 1)
    assert sweeps_service.sweeps_stalled() == []  # the second waits 2 x stall
    assert sweeps_service.sweep_reconcile(sweep_id=sweep.pk).chunks == []
    age(sweep, 2 * stall + 1)
    assert sweeps_service.sweeps_stalled() == [sweep.pk]


def test_make_run_starts_beat_with_its_worker():
    script = (factories.ROOT / "scripts" / "run").read_text()
    worker_lines = [line for line in script.splitlines() if "celery" in line and " worker " in line]
    assert worker_lines and all(" -B " in line for line in worker_lines)
    assert str(settings.CELERY_BEAT_SCHEDULE_FILENAME).startswith(str(settings.VAR_DIR))


# --- which chunks are unfinished: run 0 missing, or a variance run owed -------------------------------


def _archived_call(judge_version):
    prompt = PromptText.objects.get_or_create(sha256="0" * 64, defaults={"text": "prompt"})[0]
    return JudgeCall.objects.create(judge_version=judge_version, model="m", user_prompt=prompt)


def _verdict(sweep, judge_version, *, turn=None, conversation=None, run=0, tier=Verdict.Tier.LLM, call=None):
    return Verdict.objects.create(
        sweep=sweep,
        judge_version=judge_version,
        turn=turn,
        conversation=conversation or turn.conversation,
        run_index=run,
        tier=tier,
        status=Verdict.Status.RESOLVED,
        call=call,
    )


@pytest.fixture
def two_levels(llm_off, monkeypatch):
    """A sweep of 6 agent turns (3 conversations) by a turn judge, and the 3 conversations by a
    conversation judge, in chunks of 2, with 2 runs owed on the sampled targets; no verdict yet."""
    monkeypatch.setattr(sweeps_service.plan, "CHUNK_SIZE", 2)
    dataset = dataset_of_calls("calls", {f"c{i}": ("en", [f"answer {i}a", f"answer {i}b"]) for i in range(3)})
    turn_judge = store_judge("conciseness")
    call_judge = store_judge(
        "conciseness", slug="whole_call", version="0.1", level="conversation", user_template="{conversation_turns}"
    )
    sweep = sweeps_service.sweep_start(
        dataset=dataset, judge_versions=[turn_judge, call_judge], qa_sample=0, repeats=2, variance_sample=0.5,
        dispatch=False,
    )  # fmt: skip
    turns = list(Turn.objects.filter(conversation__dataset=dataset, role=Turn.Role.AGENT).order_by("id"))
    conversations = list(dataset.conversations.order_by("id"))
    return sweep, turn_judge, call_judge, turns, conversations


def _sample(sweep, *, turns=(), conversations=(), order=None):
    sweep.params["variance_sample"] = {"turn": [t.pk for t in turns], "conversation": [c.pk for c in conversations]}
    if order is not None:  # a scoped sweep keeps its planned targets, in their order
        sweep.params["scope_targets"] = order
    sweep.save(update_fields=["params"])


@pytest.mark.parametrize("order", ["ascending", "descending"])
@pytest.mark.parametrize("group", [2, 3, 8192])
def test_unfinished_chunks_are_those_missing_run_0_or_an_owed_run(two_levels, monkeypatch, order, group):
    """Run 0 missing, or run 0 escalated with a call on a sampled target and its second run missing:
    whatever the order of the targets and however the chunks are grouped for reading."""
    monkeypatch.setattr(recovery, "UNFINISHED_GROUP", group)
    sweep, turn_judge, call_judge, turns, conversations = two_levels
    t = turns
    c = conversations
    if order == "descending":
        t, c = t[::-1], c[::-1]
        _sample(sweep, order={str(turn_judge.pk): [x.pk for x in t], str(call_judge.pk): [x.pk for x in c]})
    call = _archived_call(turn_judge)
    # Turn chunks [t0, t1] [t2, t3] [t4, t5]: finished, owed a run, run 0 missing.
    _verdict(sweep, turn_judge, turn=t[0], call=call)
    _verdict(sweep, turn_judge, turn=t[0], run=1, call=call)
    _verdict(sweep, turn_judge, turn=t[1], tier=Verdict.Tier.SIGNATURE)
    _verdict(sweep, turn_judge, turn=t[2], call=call)  # sampled, escalated with a call: owes run 1
    _verdict(sweep, turn_judge, turn=t[3], call=call)  # not sampled: owes nothing
    _verdict(sweep, turn_judge, turn=t[4], tier=Verdict.Tier.SIGNATURE)  # sampled, but a signature's
    # Conversation chunks [c0, c1] [c2]: c1's verdict names a turn (not the conversation judge's own
    # kind of verdict), so c1 misses run 0; c2 is sampled and has both runs.
    _verdict(sweep, call_judge, conversation=c[0], call=call)
    _verdict(sweep, call_judge, turn=c[1].turns.first(), call=call)
    _verdict(sweep, call_judge, conversation=c[2], call=call)
    _verdict(sweep, call_judge, conversation=c[2], run=1, call=call)
    _sample(sweep, turns=[t[0], t[2], t[4]], conversations=[c[2]])
    unfinished = sweeps_service.sweep_unfinished_chunks(sweep=sweep)
    assert unfinished == [
        (turn_judge.pk, [t[2].pk, t[3].pk]),
        (turn_judge.pk, [t[4].pk, t[5].pk]),
        (call_judge.pk, [c[0].pk, c[1].pk]),
    ]
    # Each missing verdict written: nothing is left.
    _verdict(sweep, turn_judge, turn=t[2], run=1, call=call)
    _verdict(sweep, turn_judge, turn=t[5], tier=Verdict.Tier.SIGNATURE)
    _verdict(sweep, call_judge, conversation=c[1], tier=Verdict.Tier.SIGNATURE)
    assert sweeps_service.sweep_unfinished_chunks(sweep=sweep) == []


def test_unfinished_chunks_are_read_a_group_of_chunks_at_a_time(two_levels, monkeypatch):
    """The verdicts are read a group of a judge version's chunks per statement (run 0, then the runs
    of the group's sampled targets), never every verdict of the sweep at once: memory holds a group's."""
    monkeypatch.setattr(recovery, "UNFINISHED_GROUP", 4)
    sweep, turn_judge, _, turns, _ = two_levels
    _sample(sweep, turns=turns)
    call = _archived_call(turn_judge)
    for turn in turns:
        _verdict(sweep, turn_judge, turn=turn, call=call)
    with CaptureQueriesContext(connection) as captured:
        unfinished = sweeps_service.sweep_unfinished_chunks(sweep=sweep)
    assert [len(ids) for _, ids in unfinished] == [2, 2, 2, 2, 1]  # every run 1 owed; no conversation verdict
    read = [query["sql"] for query in captured.captured_queries if "reviewapp_verdict" in query["sql"]]
    # The turn judge's groups [t0..t3] and [t4, t5] (run 0, then the sampled runs), the conversation
    # judge's [c0, c1, c2] (run 0 only: none has one, so no run is owed).
    assert len(read) == 5, "\n".join(read)
