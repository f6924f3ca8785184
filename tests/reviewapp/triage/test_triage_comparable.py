"""judges_disagree compares versions of one judge, or judges declared comparable, never any two judges.

The flood it fixes: a demo sweep ran conciseness and speakability over the same 150 turns, two judges
asking different questions, and 120 turns were flagged because one passed what the other failed.
"""

from __future__ import annotations

import pytest

from reviewapp.models import Conversation, Dataset, ReviewItem, Sweep, Turn, Verdict
from reviewapp.triage.services.triage import comparable_groups, triage_run
from tests.factories import VerdictFactory, store_judge

pytestmark = pytest.mark.django_db
TARGETS, SPEAKABILITY_FAILS, VERSIONS_MOVED = 150, 120, 5


@pytest.fixture
def flood():
    """150 turns: conciseness passes all; speakability@1.0 fails 120; speakability@2 moves on 5 of them."""
    concise = store_judge("conciseness")
    speak = store_judge("speakability")
    speak_next = store_judge("speakability", version="2-gloss")
    dataset = Dataset.objects.create(name="demo-like", blind_review=False)
    sweep = Sweep.objects.create(dataset=dataset, status=Sweep.Status.DONE, qa_sample_rate=0.0)
    sweep.judge_versions.set([concise, speak, speak_next])
    rows, moved = [], set()
    for n in range(TARGETS):
        conversation = Conversation.objects.create(dataset=dataset, external_id=f"c{n}", language="fr")
        turn = Turn.objects.create(conversation=conversation, position=0, role=Turn.Role.AGENT, text=f"tour {n}")
        speak_passed = n >= SPEAKABILITY_FAILS
        next_passed = (not speak_passed) if n < VERSIONS_MOVED else speak_passed
        if n < VERSIONS_MOVED:
            moved.add(turn.pk)
        for version, passed in ((concise, True), (speak, speak_passed), (speak_next, next_passed)):
            rows.append(
                VerdictFactory.build(
                    sweep=sweep,
                    judge_version=version,
                    turn=turn,
                    tier=Verdict.Tier.LLM,
                    rating=3 if passed else 1,
                    passed=passed,
                )
            )
    Verdict.objects.bulk_create(rows)
    return sweep, moved


def flagged() -> dict[int, set[str]]:
    found: dict[int, set[str]] = {}
    for item in ReviewItem.objects.filter(reasons__icontains='"judges_disagree"').select_related("judge"):
        found.setdefault(item.turn_id, set()).add(item.judge.slug)
    return found


def test_only_versions_of_one_judge_are_compared(flood):
    sweep, moved = flood
    summary = triage_run(sweep=sweep, qa_rate=0.0)
    assert set(flagged()) == moved
    assert all(slugs == {"speakability"} for slugs in flagged().values())
    assert summary.reasons["judges_disagree"] == VERSIONS_MOVED


def test_judges_declared_comparable_in_the_settings_are_compared(flood, settings):
    sweep, _ = flood
    settings.TRIBUNAL_COMPARABLE_JUDGES = [["conciseness", "speakability"]]
    triage_run(sweep=sweep, qa_rate=0.0)
    assert len(flagged()) == SPEAKABILITY_FAILS  # the old flood, now only when asked for


def test_comparable_with_in_a_spec_joins_the_groups(flood):
    sweep, _ = flood
    versions = {jv.pk: jv for jv in sweep.judge_versions.select_related("judge")}
    groups = comparable_groups(versions)
    by_slug: dict[str, set[str]] = {}
    for pk, group in groups.items():
        by_slug.setdefault(versions[pk].judge.slug, set()).add(group)
    assert len(by_slug["speakability"]) == 1 and by_slug["speakability"] != by_slug["conciseness"]
    concise = next(jv for jv in versions.values() if jv.judge.slug == "conciseness")
    concise.spec = {**concise.spec, "comparable_with": ["speakability"]}
    assert len(set(comparable_groups(versions).values())) == 1
