"""Sweeps that recover: stalled sweeps are found, their unfinished chunks re-sent once, idempotently."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from reviewapp.judging.services import sweeps as sweeps_service
from reviewapp.judging.services.sweeps.verdicts import write_verdicts
from reviewapp.judging.tasks.sweeps import sweeps_reconcile
from reviewapp.models import Sweep, Verdict
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
