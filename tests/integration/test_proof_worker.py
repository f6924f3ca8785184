"""One click to the proof through the real stack: a drafted version and its parent swept by a real Celery
worker over Redis on PostgreSQL, the openai client talking to tests/llm_server.py, then the comparison."""

from django.db import connection

from reviewapp.judging.tasks.sweeps import sweep_queue
from reviewapp.models import JudgeCall, ProofRun, Role, Sweep
from reviewapp.quality.selectors.drafts import draft_from_corrections
from reviewapp.quality.selectors.proofs import proof_comparison
from reviewapp.quality.services.drafts import draft_version_save
from reviewapp.quality.services.proofs import proof_start
from tests import scenarios


def test_the_proof_runs_on_workers_and_compares_on_held_out_gold(llm_worker, wait_until, make_user):
    worker, server = llm_worker
    assert connection.vendor == "postgresql"
    lead = make_user("lea", role=Role.LEAD)
    reviewers = [make_user("ana", languages=["fr", "ja"]), make_user("bea", languages=["fr", "ja"])]
    corpus = scenarios.draft_corpus(lead, reviewers)
    draft = draft_from_corrections(version=corpus.v1)
    v2 = draft_version_save(
        parent=corpus.v1,
        label="1.1",
        guidance={lang.language: lang.proposed_guidance for lang in draft.languages},
        item_ids=draft.item_ids,
        comment_ids=draft.comment_ids,
        user=lead,
    )
    run = proof_start(version=v2, user=lead, dispatch=sweep_queue)
    sweep_ids = list(run.main_sweeps.values_list("pk", flat=True)) + list(run.rerun_sweeps.values_list("pk", flat=True))
    wait_until(
        lambda: Sweep.objects.filter(pk__in=sweep_ids, status=Sweep.Status.DONE).count() == len(sweep_ids),
        timeout=180,
        message=f"the proof's sweeps to finish\n{worker.log_tail()}",
    )
    proof = proof_comparison(run=ProofRun.objects.get(pk=run.pk), n_boot=100)
    assert proof.status == "done"
    assert proof.excluded_gold == 5
    assert proof.compared == 16
    assert {r.language for r in proof.rows} == {"", "fr", "ja"}
    # The endpoint answers the same prompt the same way: rerunning the old version moves nothing.
    assert proof.noise.n == 16 and proof.noise.noise_moved == 0
    agent_turns = 21
    assert JudgeCall.objects.filter(sweep_id__in=sweep_ids).count() == 3 * agent_turns
    assert len(server.requests) >= 3 * agent_turns
