"""Each judge's own shape on the review and dispute screens (sub-metrics, criteria, nested dimensions, the
judge's failure modes apart from other flags), and reviewers labelling at that grain."""

import re

import pytest
from django.urls import reverse

from reviewapp.models import Dataset, JudgeVersion, Review, Role, Verdict
from reviewapp.review.selectors import review_screen, verdict_shapes
from reviewapp.review.selectors.verdict_shapes import verdict_shape
from reviewapp.review.services import reviews
from reviewapp.triage.services import claims
from tests.factories import HTMX, category, make_item, store_judge

pytestmark = pytest.mark.django_db

WEIGHTED = {"language_match": 40.0, "clarity": 85.0, "terminology": 70.0, "structure": 90.0, "appropriateness": 100.0}


def _item_of(slug: str, *, sub_scores: dict, flags: list, on=None, rating=None, passed=None):
    """A claimable item whose one verdict comes from the shipped judge `slug` (its real spec)."""
    version = store_judge(slug)
    item = make_item("fr", judge_slug=slug, on=on, verdict_rating=rating, verdict_passed=passed)
    Verdict.objects.filter(turn=item.turn).update(judge_version=version, sub_scores=sub_scores, flags=flags)
    JudgeVersion.objects.filter(judge=version.judge).exclude(pk=version.pk).delete()
    return item


@pytest.fixture
def reviewer(make_user):
    return make_user("ana", languages=["fr"])


def test_weighted_judge_shows_each_sub_metric_with_weight_threshold_and_its_own_failure_modes(client, reviewer):
    item = _item_of(
        "language_clarity",
        sub_scores=WEIGHTED,
        flags=["wrong_language", "critical_failed:language_match"],
        rating=64.0,
        passed=False,
    )
    claims.item_claim(user=reviewer, item=item)
    client.force_login(reviewer)
    html = client.get(reverse("review_item", args=[item.pk])).content.decode()
    rows = re.findall(
        r'data-part="(\w+)">\s*<th scope="row">\w+</th>\s*<td class="num"><span class="strong">([\d.]+)', html
    )
    # Heaviest sub-metric first (language_match 0.40, clarity 0.25), ties by name (structure, terminology).
    order = ["language_match", "clarity", "structure", "terminology", "appropriateness"]
    assert rows == [(name, str(WEIGHTED[name])) for name in order]
    language = html[html.index('data-part="language_match"') :].split("</tr>")[0]
    assert "not met" in language and "weight 0.4, threshold 60, critical" in language
    assert 'aria-label="The judge\'s failure modes"><span class="mode">wrong_language</span>' in html
    assert '<span class="mode mode--flag">critical_failed:language_match</span>' in html

    # The fragment alone shows the same parts; another language is forbidden.
    fragment = client.get(reverse("review_verdicts", args=[item.pk]), **HTMX).content.decode()
    assert fragment.lstrip().startswith('<section id="verdicts"') and 'data-part="clarity"' in fragment
    client.force_login(_other(client))
    assert client.get(reverse("review_item", args=[item.pk])).status_code == 403


def _other(client):
    from django.contrib.auth import get_user_model

    from reviewapp.models import Profile

    user = get_user_model().objects.create_user("kenji")
    Profile.objects.update_or_create(user=user, defaults={"role": Role.REVIEWER, "languages": ["ja"]})
    return user


def test_rubric_criteria_and_nested_dimensions_are_shown_part_by_part():
    version = store_judge("turn_rubric")
    shape = verdict_shape(
        version.spec,
        {
            "addresses_request": 1.0,
            "clear_next_step": 0.0,
            "dimensions": {"hallucination": {"rating": 2, "flagged": True, "explanation": "invented a fare"}},
        },
        ["required_failed:clear_next_step"],
    )
    by_name = {p.name: p for p in shape.parts}
    assert by_name["addresses_request"].passed is True and by_name["clear_next_step"].passed is False
    assert "optional" in by_name["clear_next_step"].note and "required" in by_name["addresses_request"].note
    nested = by_name["dimensions.hallucination"]
    assert (nested.score, nested.passed, nested.declared) == (2, False, False)
    assert ("explanation", "invented a fare") in nested.detail
    assert shape.other_flags == ("required_failed:clear_next_step",) and shape.failure_modes == ()


def test_review_form_offers_the_judges_grain_and_stores_it(client, reviewer):
    item = _item_of("language_clarity", sub_scores=WEIGHTED, flags=[], rating=64.0, passed=False)
    shared = category("gloss", "Gloss")
    claims.item_claim(user=reviewer, item=item)
    client.force_login(reviewer)
    html = client.get(reverse("review_item", args=[item.pk])).content.decode()
    assert all(f'name="grain_score__{name}"' in html for name in WEIGHTED)
    for mode in ("wrong_language", "unclear", "wrong_term", "poor_structure", "wrong_register"):
        assert f'name="grain_modes" value="{mode}"' in html
    assert f'name="categories" value="{shared.pk}"' in html  # the shared taxonomy beside the judge's own

    refused = client.post(
        reverse("review_item", args=[item.pk]),
        {"rating": "50", "grain_score__clarity": "140", "categories": [shared.pk]},
    )
    assert refused.status_code == 400 and "clarity: 140 is outside 0..100" in refused.content.decode()
    refused = client.post(reverse("review_item", args=[item.pk]), {"rating": "50", "grain_modes": ["made_up"]})
    assert refused.status_code == 400 and "made_up: not a failure mode of this judge" in refused.content.decode()
    assert not Review.objects.exists()

    client.post(
        reverse("review_item", args=[item.pk]),
        {
            "rating": "50",
            "grain_score__language_match": "20",
            "grain_score__clarity": "",
            "grain_modes": ["wrong_language"],
        },
    )
    review = Review.objects.get()
    assert review.grain == {
        "sub_scores": {"language_match": 20.0},
        "failure_modes": ["wrong_language"],
        "judge_version": JudgeVersion.objects.get(judge=item.judge).pk,
    }


def test_blind_review_offers_the_grain_but_shows_nothing_the_judge_said(client, reviewer):
    blind = Dataset.objects.create(name="blind", blind_review=True)
    item = _item_of("language_clarity", sub_scores=WEIGHTED, flags=["wrong_language"], on=blind, rating=64.0)
    claims.item_claim(user=reviewer, item=item)
    client.force_login(reviewer)
    html = client.get(reverse("review_item", args=[item.pk])).content.decode()
    assert 'name="grain_score__language_match"' in html
    assert 'data-part="' not in html and "mode mode--flag" not in html and ">40.0<" not in html


def test_dispute_page_shows_parts_and_each_reviews_grain(client, make_user, reviewer):
    item = _item_of("language_clarity", sub_scores=WEIGHTED, flags=["wrong_language"], rating=64.0, passed=False)
    claims.item_claim(user=reviewer, item=item)
    reviews.review_submit(
        item=item, user=reviewer, rating=80, grain={"sub_scores": {"clarity": 30.0}, "criteria": {"x": False}}
    )
    client.force_login(make_user("lea", role=Role.LEAD))
    html = client.get(reverse("dispute_detail", args=[item.pk])).content.decode()
    assert 'data-part="language_match"' in html and '<span class="mode">wrong_language</span>' in html
    assert '<span class="mode">clarity 30.0</span>' in html and '<span class="mode">x: not met</span>' in html
    fragment = client.get(reverse("dispute_detail", args=[item.pk]), **HTMX).content.decode()
    assert fragment.lstrip().startswith('<article id="dispute"') and 'data-part="clarity"' in fragment


def test_conversation_page_shows_each_verdict_in_its_shape(client, make_user):
    item = _item_of("language_clarity", sub_scores=WEIGHTED, flags=["wrong_language"], rating=64.0, passed=False)
    client.force_login(make_user("lea", role=Role.LEAD))
    html = client.get(reverse("conversation_detail", args=[item.conversation_id])).content.decode()
    assert all(f'data-part="{name}"' in html for name in WEIGHTED)


def test_a_lead_decides_with_the_judges_own_failure_modes_beside_the_shared_ones(client, make_user, reviewer):
    from reviewapp.models import GoldLabel, ReviewItem

    item = _item_of("language_clarity", sub_scores=WEIGHTED, flags=["wrong_language"], rating=64.0, passed=False)
    ReviewItem.objects.filter(pk=item.pk).update(status=ReviewItem.Status.AWAITING_ADJUDICATION)
    shared = category("gloss", "Gloss")
    client.force_login(make_user("lea", role=Role.LEAD))
    url = reverse("dispute_detail", args=[item.pk])
    html = client.get(url).content.decode()
    assert 'name="judge_modes" value="wrong_language"' in html and 'name="categories" value="gloss"' in html
    decide = reverse("dispute_decide", args=[item.pk])
    refused = client.post(decide, {"outcome": "fail", "judge_modes": ["made_up"], "rationale": "x"})
    assert refused.status_code == 400 and not GoldLabel.objects.filter(source="adjudicated").exists()
    response = client.post(
        decide,
        {"outcome": "fail", "categories": [shared.slug], "judge_modes": ["wrong_language"], "rationale": "Anglais."},
    )
    assert response.status_code == 302, re.findall(
        r'field__error">([^<]*)|role="alert"><p>([^<]*)', response.content.decode()
    )
    gold = GoldLabel.objects.get(source="adjudicated")
    assert gold.failure_modes == ["gloss", "wrong_language"]


def test_the_dispute_form_and_the_review_screen_read_the_same_grain_however_many_imports_came_after(reviewer):
    """The newest version with a spec gives the grain, even behind more imported placeholders than any
    fixed window: the dispute form's read and the review screen's item query agree."""
    item = _item_of("language_clarity", sub_scores={}, flags=[])
    version = JudgeVersion.objects.get(judge=item.judge)
    for n in range(25):
        JudgeVersion.objects.create(
            judge=version.judge, version=f"imported-{n}", spec={"imported": True}, spec_hash=f"{n:064d}"
        )

    dispute_grain = verdict_shapes.review_grain(judge=version.judge)
    screen = review_screen.item_for_review(item_id=item.pk, user=reviewer)

    assert dispute_grain.judge_version_id == version.pk
    assert verdict_shapes.annotated_grain(screen) == dispute_grain
    assert {f.name for f in dispute_grain.fields} == set(WEIGHTED)
