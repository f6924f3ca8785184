"""Audio through the real stack: PostgreSQL, Redis, a real Celery worker process and the real openai client
over HTTP to tests/llm_server.py. An import started as from the browser runs on the worker and attaches an
EVA record's recording; a listening judge's sweep then sends each agent turn's segment, and the bytes the
endpoint received are exactly that stretch of the recording."""

import hashlib

import pytest
from django.db import connection

from reviewapp.corpus.services.import_jobs import import_job_start
from reviewapp.corpus.tasks.import_jobs import import_job_queue
from reviewapp.judging.services.sweeps import sweep_start
from reviewapp.judging.tasks.sweeps import sweep_queue
from reviewapp.models import Conversation, ImportJob, Turn, Verdict
from tests.factories import store_judge
from tests.reviewapp.corpus.audio_support import RATE, eva_record_with_audio, frames, read_frames


@pytest.fixture
def audio_worker(start_llm_worker, settings, tmp_path):
    """The worker restarted with its media, import folder and LLM endpoint where this test can see them."""
    paths = {"MEDIA_ROOT": tmp_path / "media", "TRIBUNAL_IMPORT_ROOT": tmp_path / "imports"}
    paths["TRIBUNAL_IMPORT_ROOT"].mkdir()
    for name, value in paths.items():
        setattr(settings, name, value)
    worker, server = start_llm_worker(behaviour="good", env=paths)
    return worker, server, paths


def test_imported_recording_reaches_the_listening_judge_segment_by_segment(audio_worker, wait_until):
    worker, server, paths = audio_worker
    assert connection.vendor == "postgresql"
    record = eva_record_with_audio(paths["TRIBUNAL_IMPORT_ROOT"])

    job = import_job_start(user=None, server_path="run", dispatch=import_job_queue)
    wait_until(
        lambda: ImportJob.objects.get(pk=job.pk).finished,
        timeout=120,
        message=f"import job {job.pk} to finish\n{worker.log_tail()}",
    )
    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE, job.errors
    conversation = Conversation.objects.get(external_id="1.1.2")
    recording = (record / "audio_mixed.wav").read_bytes()
    assert conversation.audio.read() == recording

    listening = store_judge("tts_fidelity", needs_audio=True)
    sweep = sweep_start(dataset=conversation.dataset, judge_versions=[listening], qa_sample=0, dispatch=sweep_queue)
    wait_until(
        lambda: Verdict.objects.filter(sweep=sweep).count() == 10,
        timeout=120,
        message=f"sweep {sweep.pk} to write its verdicts\n{worker.log_tail()}",
    )
    agent_turns = {t.pk: t for t in Turn.objects.filter(conversation=conversation, role="agent")}
    assert len(server.audio_received) == len(agent_turns) == 10
    by_sha = {hashlib.sha256(data).hexdigest(): data for [(fmt, data)] in server.audio_received}
    for verdict in Verdict.objects.filter(sweep=sweep).select_related("call"):
        turn = agent_turns[verdict.turn_id]
        sent = by_sha[verdict.call.audio["sha256"]]
        rate, samples = read_frames(sent)
        assert rate == RATE
        assert samples == frames(turn.audio_start_ms * RATE // 1000, turn.audio_end_ms * RATE // 1000)
        assert verdict.call.audio["bytes"] == len(sent)
