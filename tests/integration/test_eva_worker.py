"""EVA's conciseness judge over EVA's conciseness validation set, through the real stack.

PostgreSQL, Redis as broker, a real Celery worker process, and the real openai client talking over
HTTP to tests/llm_server.py, which answers EVA's prompt as EVA's judges do: one array entry per
"Turn N:" block. Every gold-labelled agent turn gets one resolved turn verdict carrying the rating
the endpoint gave it, and judge_report scores the version against the 479 gold labels.
"""

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from sklearn.metrics import accuracy_score

from reviewapp.corpus.services.imports import dataset_import
from reviewapp.judging.services.sweeps import sweep_start
from reviewapp.judging.tasks.sweeps import sweep_queue
from reviewapp.models import JudgeCall, JudgeVersion, Sweep, Verdict
from tests.reviewapp.judging.eva_support import (
    CONCISENESS_SET,
    conciseness_report,
    gold_and_predicted,
    ratings_given,
    ratings_stored,
)

REPO = Path(__file__).resolve().parents[2]
JUDGE_YAML = REPO / "tests" / "fixtures" / "eva" / "judge.yaml"


@pytest.mark.llm_server(latency_s=0.02)
def test_eva_conciseness_over_its_validation_set_on_a_worker(llm_worker, wait_until):
    worker, server = llm_worker
    assert connection.vendor == "postgresql"
    summary = dataset_import(path=CONCISENESS_SET, fmt="eva-validation", dataset_name="eva-conciseness")
    assert summary.labels == 479
    call_command("load_judges", str(JUDGE_YAML), "--version", "eva-997ae97", stdout=StringIO())
    version = JudgeVersion.objects.get(judge__slug="conciseness", version="eva-997ae97")
    dataset = version.judge.gold_labels.first().conversation.dataset

    sweep = sweep_start(dataset=dataset, judge_versions=[version], qa_sample=0, dispatch=sweep_queue)
    wait_until(
        lambda: Sweep.objects.get(pk=sweep.pk).status == Sweep.Status.DONE,
        timeout=240,
        message=f"sweep {sweep.pk} to finish\n{worker.log_tail()}",
    )

    verdicts = list(Verdict.objects.filter(sweep=sweep).select_related("turn"))
    assert len(verdicts) == 479
    assert {(v.status, v.turn.role) for v in verdicts} == {("resolved", "agent")}
    assert JudgeCall.objects.filter(sweep=sweep).count() == 100 == len(server.requests)

    given = ratings_given(server.responses)
    assert ratings_stored(verdicts) == given

    gold, predicted = gold_and_predicted(given)
    report = conciseness_report()
    assert report["n"] == 479
    assert report["accuracy"]["value"] == pytest.approx(accuracy_score(gold, predicted), abs=1e-4)
