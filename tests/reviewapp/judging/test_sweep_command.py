"""The sweep command: --eager runs in-process, progress on stderr, one JSON line at the end of stdout."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from reviewapp.models import Sweep, Verdict
from tests.factories import add_signature, dataset_of_calls, store_judge


@pytest.mark.django_db(transaction=True)
def test_eager_sweep_prints_progress_then_one_json_line(scripted_llm, eager_celery):
    judge = store_judge("conciseness")
    add_signature(judge.judge, pattern="one moment")
    dataset_of_calls("cmd", {f"c{i}": ("en", ["one moment" if i == 0 else f"turn {i}"]) for i in range(5)})
    out, err = StringIO(), StringIO()
    call_command(
        "sweep", "--dataset", "cmd", "--judge", "conciseness@1.0", "--repeats", "2", "--eager", stdout=out, stderr=err
    )
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 1
    result = json.loads(lines[0])
    sweep = Sweep.objects.get()
    assert result == {
        "sweep": sweep.pk,
        "status": "done",
        "verdicts": Verdict.objects.filter(sweep=sweep).count(),
        "tier1_resolved": 1,
        "escalated": 4,
        "unresolved": 0,
        "failed": 0,
    }
    assert "verdicts" in err.getvalue() and f"sweep {sweep.pk}" in err.getvalue().lower()


@pytest.mark.django_db
def test_no_wait_returns_at_once_and_unknown_names_are_refused(monkeypatch, django_capture_on_commit_callbacks):
    store_judge("conciseness")
    dataset_of_calls("cmd2", {"a": ("en", ["hello"])})
    queued = []
    monkeypatch.setattr("reviewapp.judging.tasks.sweeps.sweep_dispatch.delay", lambda sweep_id: queued.append(sweep_id))
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("sweep", "--dataset", "cmd2", "--judge", "conciseness", "--no-wait", stdout=out, stderr=StringIO())
    result = json.loads(out.getvalue())
    assert result["status"] == "pending" and result["verdicts"] == 0
    assert queued == [result["sweep"]]

    with pytest.raises(CommandError, match=r"no version '9\.9'"):
        call_command("sweep", "--dataset", "cmd2", "--judge", "conciseness@9.9", stderr=StringIO())
    with pytest.raises(CommandError, match="No dataset"):
        call_command("sweep", "--dataset", "nope", "--judge", "conciseness", stderr=StringIO())
