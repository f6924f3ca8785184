"""The turn review screen: full page, htmx fragments, language access, blind mode, submit and skip."""

import pytest
from django.urls import reverse

from reviewapp.models import Comment, Review, ReviewItem, ReviewSkip, Role, Verdict
from reviewapp.triage.services import claims
from tests.factories import HTMX, category, dataset, make_item

pytestmark = pytest.mark.django_db
SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"


@pytest.fixture
def ana(make_user):
    return make_user("ana", languages=["fr"])


def claimed(user, **kwargs) -> ReviewItem:
    item = make_item("fr", **kwargs)
    return claims.item_claim(user=user, item=item)


def test_review_screen_shows_context_target_verdicts_form_and_diff(client, ana):
    item = claimed(ana, intended_text="Votre vol part à 9 h 40.", text="Votre vol part à neuf heures quarante.")
    category("number-reading", "Number reading")
    client.force_login(ana)

    response = client.get(reverse("review_item", args=[item.pk]))

    html = response.content.decode()
    assert response.status_code == 200
    assert html.index("Bonjour, mon vol ?") < html.index('id="target-turn"') < html.index("Merci.")
    assert "<del>9 h 40.</del>" in html and "<ins>neuf heures quarante.</ins>" in html
    assert 'conciseness<span class="muted">@v1</span>' in html and "Un peu long pour l&#x27;oral." in html
    verdict = Verdict.objects.get(turn=item.turn)
    assert f'name="verdict_{verdict.pk}" value="agree"' in html
    assert 'name="rating" value="3" data-digit="3"' in html and "Number reading" in html
    assert f'hx-post="{reverse("review_heartbeat", args=[item.pk])}"' in html
    assert "js/review.js" in html and "<script>" not in html.split("js/review.js")[1]
    # Reviewers label independently of gold: no gold label and no "agrees with gold" mark on this screen.
    assert "gold" not in html.split('<main id="main"')[1].lower()


def test_transcript_text_is_escaped_on_the_screen_and_in_fragments(client, ana):
    item = claimed(ana, text=f"Nom : {SCRIPT} {IMG} javascript:alert(1)")
    client.force_login(ana)
    for response in (
        client.get(reverse("review_item", args=[item.pk])),
        client.get(reverse("turn_comments", args=[item.turn_id]), **HTMX),
    ):
        html = response.content.decode()
        assert SCRIPT not in html and IMG not in html
    html = client.get(reverse("review_item", args=[item.pk])).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and 'href="javascript:' not in html


def test_verdicts_fragment_and_blind_mode(client, ana, make_user):
    blind = dataset("blind", blind_review=True)
    item = claimed(ana, on=blind, reviews_required=2)
    client.force_login(ana)

    before = client.get(reverse("review_verdicts", args=[item.pk]), **HTMX).content.decode()
    assert "<html" not in before and "Blind review" in before and "Un peu long" not in before
    page = client.get(reverse("review_item", args=[item.pk])).content.decode()
    assert "Un peu long" not in page

    response = client.post(reverse("review_item", args=[item.pk]), {"rating": "2"})
    assert response.status_code == 302 and response.url == reverse("review_item", args=[item.pk])
    after = client.get(reverse("review_verdicts", args=[item.pk]), **HTMX).content.decode()
    assert "Un peu long" in after and "Reviewers' labels" in after


def test_submit_stores_the_label_and_opens_the_next_item(client, ana):
    first = claimed(ana, priority=300)
    second = make_item("fr", priority=100)
    cat = category()
    verdict = Verdict.objects.get(turn=first.turn)
    client.force_login(ana)

    response = client.post(
        reverse("review_item", args=[first.pk]),
        {
            "rating": "1",
            "categories": [cat.pk],
            f"verdict_{verdict.pk}": "disagree",
            "comment": "Beaucoup trop long.",
            "quoted_span": "excellent voyage",
            "seconds_spent": "42",
        },
    )

    assert response.status_code == 302 and response.url == reverse("review_item", args=[second.pk])
    review = Review.objects.get(item=first)
    assert (review.rating, review.seconds_spent, review.quoted_span) == (1.0, 42, "excellent voyage")
    assert review.verdict_agreement == {str(verdict.pk): "disagree"}
    first.refresh_from_db()
    assert first.status == ReviewItem.Status.AWAITING_ADJUDICATION
    assert Comment.objects.get(turn=first.turn).categories.get() == cat


def test_invalid_submit_rerenders_with_the_error(client, ana):
    item = claimed(ana)
    client.force_login(ana)
    response = client.post(reverse("review_item", args=[item.pk]), {"rating": "9", "comment": "gardé"})
    assert response.status_code == 409
    html = response.content.decode()
    assert "at most 3" in html and "gardé" in html
    assert not Review.objects.exists()


def test_skip_needs_a_reason_then_moves_on(client, ana):
    item = claimed(ana)
    client.force_login(ana)
    assert client.post(reverse("review_skip", args=[item.pk]), {"reason": ""}).status_code == 409
    response = client.post(reverse("review_skip", args=[item.pk]), {"reason": "Accent I do not know"})
    assert response.status_code == 302 and "empty=1" in response.url
    assert ReviewSkip.objects.get().reason == "Accent I do not know"


def test_heartbeat_renews_the_lease_or_says_it_is_lost(client, ana, make_user):
    item = claimed(ana)
    client.force_login(ana)
    response = client.post(reverse("review_heartbeat", args=[item.pk]), **HTMX)
    assert response.status_code == 200 and "Claimed by you until" in response.content.decode()
    ReviewItem.objects.filter(pk=item.pk).update(claimed_by=make_user("ben", languages=["fr"]))
    lost = client.post(reverse("review_heartbeat", args=[item.pk]), **HTMX).content.decode()
    assert "lease ended" in lost and "hx-trigger" not in lost


def test_another_reviewers_item_can_be_read_but_not_labelled(client, ana, make_user):
    item = claimed(ana)
    ben = make_user("ben", languages=["fr"])
    client.force_login(ben)
    html = client.get(reverse("review_item", args=[item.pk])).content.decode()
    assert "ana is reviewing this item right now" in html and 'id="review-form"' not in html
    assert client.post(reverse("review_item", args=[item.pk]), {"rating": "2"}).status_code == 409
    # Claiming it directly gives Ben the next free item instead.
    free = make_item("fr")
    assert client.post(reverse("review_claim", args=[item.pk])).url == reverse("review_item", args=[free.pk])


def test_items_in_languages_not_assigned_are_403_everywhere(client, make_user):
    item = make_item("ja", text="ご予約番号は")
    client.force_login(make_user("ana", languages=["fr"]))
    for response in (
        client.get(reverse("review_item", args=[item.pk])),
        client.get(reverse("review_verdicts", args=[item.pk]), **HTMX),
        client.post(reverse("review_item", args=[item.pk]), {"rating": "2"}),
        client.post(reverse("review_claim", args=[item.pk])),
        client.post(reverse("review_skip", args=[item.pk]), {"reason": "x"}),
        client.post(reverse("review_heartbeat", args=[item.pk]), **HTMX),
        client.get(reverse("turn_comments", args=[item.turn_id]), **HTMX),
    ):
        assert response.status_code == 403
        assert "ご予約番号は" not in response.content.decode()
    assert not Review.objects.exists() and not ReviewSkip.objects.exists()
    item.refresh_from_db()
    assert item.claimed_by is None
    assert client.get(reverse("review_item", args=[999999])).status_code == 404


def test_leads_read_any_language(client, make_user):
    item = make_item("ja", text="ご予約番号は")
    client.force_login(make_user("lea", role=Role.LEAD))
    assert "ご予約番号は" in client.get(reverse("review_item", args=[item.pk])).content.decode()


@pytest.mark.parametrize("context_turns", [1, 30])
def test_review_screen_and_submit_run_a_fixed_number_of_queries(
    client, ana, django_assert_max_num_queries, context_turns
):
    item = claimed(ana)
    for _ in range(context_turns):
        make_item("fr")
    Verdict.objects.bulk_create(
        Verdict(
            sweep=Verdict.objects.first().sweep,
            judge_version=Verdict.objects.first().judge_version,
            conversation=item.conversation,
            turn=item.turn,
            run_index=run,
            tier=Verdict.Tier.LLM,
            status=Verdict.Status.RESOLVED,
            rating=2,
        )
        for run in range(1, context_turns + 1)
    )
    client.force_login(ana)
    with django_assert_max_num_queries(7):
        assert client.get(reverse("review_item", args=[item.pk])).status_code == 200
    with django_assert_max_num_queries(14):
        assert client.post(reverse("review_item", args=[item.pk]), {"rating": "2"}).status_code == 302
