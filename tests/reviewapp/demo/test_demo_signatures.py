"""The demo ships tier-1 signatures (demo/signatures.yaml), loaded by seed_demo through the signature service, so the demo's
first sweep resolves a visible share of turns without an LLM call, and none against gold."""

import pytest
from django.core.management import call_command

from reviewapp.demo.loader import DEMO_DATASET, demo_seed, demo_yaml
from reviewapp.judging.services.signature_checks import signature_check_all
from reviewapp.models import GoldLabel, JudgeVersion, Signature, SignatureVersion, Turn, Verdict
from tests.shipped import JUDGES

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    summary = demo_seed()
    call_command("load_judges", str(JUDGES), verbosity=0)
    return summary


def test_every_demo_language_gets_signatures_with_matching_evidence(demo):
    signatures = Signature.objects.select_related("judge").prefetch_related("evidence__conversation")
    languages = {s.language for s in signatures}
    assert languages == set(demo_yaml("signatures.yaml")["patterns"])  # "fr" covers fr-CA
    assert languages == {"en", "fr", "es", "de", "it", "hi", "ja", "ko"}
    assert {s.judge.slug for s in signatures} == {"conciseness", "speakability"}
    assert {s.intent for s in signatures} == {"greeting", "hold", "closing"}
    for signature in signatures:
        evidence = list(signature.evidence.all())
        assert evidence, signature
        assert all(t.conversation.dataset.name == DEMO_DATASET for t in evidence)
    # Created through the service: each has its first version, measured on the demo's gold.
    assert SignatureVersion.objects.filter(change="created").count() == signatures.count()
    for check in signature_check_all(signatures):
        assert check.contradicting_turns == [], check.signature
        assert check.compared >= 1


def test_seeding_again_keeps_the_signatures(demo):
    before = sorted(Signature.objects.values_list("pk", flat=True))
    demo_seed()
    assert sorted(Signature.objects.values_list("pk", flat=True)) == before
    demo_seed(reset=True)
    assert Signature.objects.count() == len(before)
    assert not Signature.objects.filter(evidence__isnull=True).exists()


def test_the_demos_first_sweep_resolves_a_visible_share_in_tier_1(demo, llm_off, run_sweep):
    from reviewapp.models import Dataset

    dataset = Dataset.objects.get(name=DEMO_DATASET)
    conciseness = JudgeVersion.objects.get(judge__slug="conciseness", version="1.0")
    sweep = run_sweep(dataset=dataset, judge_versions=[conciseness], qa_sample=0)
    agent_turns = Turn.objects.filter(conversation__dataset=dataset, role="agent").count()
    assert sweep.total_targets == agent_turns == 213
    # Greetings, holds and closings: 66 of the 213 agent turns never reach the LLM.
    assert sweep.tier1_resolved == 66
    assert sweep.escalated == agent_turns - 66
    assert sweep.signature_versions.count() == Signature.objects.filter(judge__slug="conciseness").count()
    tier1 = Verdict.objects.filter(sweep=sweep, tier="signature").select_related("turn")
    gold = {
        g.turn_id: g.rating
        for g in GoldLabel.objects.filter(judge__slug="conciseness", turn__in=[v.turn_id for v in tier1])
    }
    assert len(gold) == 66 and set(gold.values()) == {3.0}  # every one agrees with the demo's gold
    assert {(v.rating, v.passed, v.label) for v in tier1} == {(3.0, True, "concise")}
