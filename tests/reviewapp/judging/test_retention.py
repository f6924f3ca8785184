"""Retention: old judge-call archives go, verdicts, labels and snapshots stay; every run records its code version."""

import json
import subprocess
from datetime import timedelta

import pytest
from celery.schedules import crontab
from django.conf import settings as django_settings
from django.core.management import call_command
from django.utils import timezone

from reviewapp import versioning
from reviewapp.celery import app as celery_app
from reviewapp.judging.services.calls import prompt_texts_store
from reviewapp.judging.services.retention import RetentionError, judge_calls_purge
from reviewapp.judging.tasks.retention import judge_calls_purge_old
from reviewapp.models import ExportSnapshot, GoldLabel, JudgeCall, PromptText, Verdict

pytestmark = pytest.mark.django_db


def archive(corpus, *, days_old: int, user_prompt: str, system_prompt: str = "You are a judge.") -> JudgeCall:
    prompts = prompt_texts_store(texts=[user_prompt, system_prompt])
    call = JudgeCall.objects.create(
        judge_version=corpus.v2,
        system_prompt=prompts[system_prompt],
        user_prompt=prompts[user_prompt],
        model="m",
        raw_response='{"rating": 2}',
    )
    JudgeCall.objects.filter(pk=call.pk).update(created_at=timezone.now() - timedelta(days=days_old))
    return call


def test_old_calls_and_their_orphan_prompts_go_verdicts_stay(corpus, media):
    old = archive(corpus, days_old=120, user_prompt="old prompt")
    shared = archive(corpus, days_old=100, user_prompt="shared prompt")
    recent = archive(corpus, days_old=5, user_prompt="shared prompt")
    verdict = Verdict.objects.filter(judge_version=corpus.v2).first()
    Verdict.objects.filter(pk=verdict.pk).update(call=old)
    snapshot = export_support_snapshot(corpus)
    gold_before = GoldLabel.objects.count()

    preview = judge_calls_purge(older_than_days=90, dry_run=True)
    assert (preview.calls, preview.prompts, preview.dry_run) == (2, 1, True)
    assert JudgeCall.objects.count() == 3

    result = judge_calls_purge(older_than_days=90, batch_size=1)

    assert (result.calls, result.prompts) == (2, 1)
    assert list(JudgeCall.objects.values_list("pk", flat=True)) == [recent.pk]
    assert not JudgeCall.objects.filter(pk__in=[old.pk, shared.pk]).exists()
    # "old prompt" is gone; the system prompt and "shared prompt" are still used by the recent call.
    assert set(PromptText.objects.values_list("text", flat=True)) == {"You are a judge.", "shared prompt"}
    verdict.refresh_from_db()
    assert verdict.call_id is None and verdict.rating is not None and verdict.status == "resolved"
    assert GoldLabel.objects.count() == gold_before
    assert ExportSnapshot.objects.get(pk=snapshot.pk).status == "done"


def export_support_snapshot(corpus):
    from reviewapp.exports.services.exports import snapshot_create, snapshot_write

    return snapshot_write(snapshot_id=snapshot_create(judge=corpus.judge, fmt="jsonl", build=False).pk)


def test_the_setting_is_the_default_window(corpus, settings):
    assert django_settings.JUDGE_CALL_RETENTION_DAYS == 90
    settings.JUDGE_CALL_RETENTION_DAYS = 10
    archive(corpus, days_old=11, user_prompt="a")
    archive(corpus, days_old=9, user_prompt="b")
    assert judge_calls_purge_old() | {"cutoff": None} == {"cutoff": None, "calls": 1, "prompts": 1, "dry_run": False}
    assert JudgeCall.objects.count() == 1


def test_the_command_and_its_dry_run(corpus, capsys):
    archive(corpus, days_old=40, user_prompt="a")
    call_command("purge_judge_calls", "--days", "30", "--dry-run")
    assert json.loads(capsys.readouterr().out)["calls"] == 1
    assert JudgeCall.objects.count() == 1
    call_command("purge_judge_calls", "--days", "30")
    assert json.loads(capsys.readouterr().out)["calls"] == 1
    assert JudgeCall.objects.count() == 0
    with pytest.raises(RetentionError):
        judge_calls_purge(older_than_days=0)


def test_celery_beat_runs_the_purge_every_night():
    entry = django_settings.CELERY_BEAT_SCHEDULE["judge-calls-purge"]
    assert entry["task"] == judge_calls_purge_old.name


def test_celery_beat_has_the_purge_at_3_17_and_the_other_entries_as_set():
    # The settings give the purge's time as crontab fields; the app's beat schedule has the crontab.
    beat = celery_app.conf.beat_schedule
    assert beat["judge-calls-purge"] == {
        "task": "reviewapp.judging.tasks.retention.judge_calls_purge_old",
        "schedule": crontab(hour=3, minute=17),
    }
    assert beat["judge-calls-purge"]["schedule"] != crontab(hour=3, minute=18)
    assert beat["sweeps-reconcile"] == django_settings.CELERY_BEAT_SCHEDULE["sweeps-reconcile"]
    assert beat["export-lines-keep"] == {
        "task": "reviewapp.exports.tasks.exports.export_lines_keep_current",
        "schedule": 300.0,
    }
    assert set(beat) == {"judge-calls-purge", "signatures-recheck", "sweeps-reconcile", "export-lines-keep"}


def test_code_version_prefers_the_setting_then_git_then_unknown(settings, monkeypatch, tmp_path):
    settings.TRIBUNAL_CODE_VERSION = "release-7"
    assert versioning.code_version() == "release-7"
    settings.TRIBUNAL_CODE_VERSION = ""

    # A checkout of our own, so the expected commit is known without asking the code under test.
    def git(*args):
        return subprocess.run(["git", *args], cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip()

    git("init", "-q")
    (tmp_path / "f").write_text("x")
    git("add", "f")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "one")
    commit = git("rev-parse", "HEAD")
    assert len(commit) == 40
    settings.BASE_DIR = tmp_path
    versioning._git_head.cache_clear()
    try:
        assert versioning.code_version() == commit
        settings.BASE_DIR = tmp_path / "not-a-checkout"
        (tmp_path / "not-a-checkout").mkdir()
        monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
        versioning._git_head.cache_clear()
        assert versioning.code_version() == "unknown"
    finally:
        versioning._git_head.cache_clear()
