"""Comment threads on turns, the comments page, and the taxonomy page."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from reviewapp.models import AuditEvent, Category, Comment, Role
from reviewapp.review.selectors import comments as comment_selectors
from reviewapp.review.services import comments as comments_services
from reviewapp.review.services import reviews
from reviewapp.triage.services import claims
from tests.factories import HTMX, category, dataset, make_item

pytestmark = pytest.mark.django_db


def test_thread_page_and_htmx_post_with_categories_reply_and_flag(client, make_user):
    item = make_item("fr")
    cat = category("number-reading", "Number reading")
    ana = make_user("ana", languages=["fr"])
    client.force_login(ana)

    page = client.get(reverse("turn_comments", args=[item.turn_id]))
    assert page.status_code == 200 and "No comment on this turn yet." in page.content.decode()

    created = client.post(
        reverse("turn_comments", args=[item.turn_id]),
        {"body": "« 9 h 40 » se lit « neuf heures quarante ».", "categories": [cat.pk], "flagged_for_lead": "1"},
        **HTMX,
    )
    html = created.content.decode()
    assert created.status_code == 200 and "<html" not in html and 'id="thread-' in html
    comment = Comment.objects.get()
    assert comment.flagged_for_lead and list(comment.categories.all()) == [cat]
    assert "flagged for a lead" in html and "Number reading" in html

    reply = client.post(reverse("turn_comments", args=[item.turn_id]), {"body": "D'accord.", "parent": comment.pk})
    assert reply.status_code == 302
    assert Comment.objects.get(parent=comment).body == "D'accord."
    client.post(reverse("comment_flag", args=[comment.pk]), {"flagged": "0"}, **HTMX)
    comment.refresh_from_db()
    assert not comment.flagged_for_lead
    assert client.post(reverse("turn_comments", args=[item.turn_id]), {"body": " "}, **HTMX).status_code == 400


def test_comments_page_filters_by_language_category_judge_and_dataset(client, make_user):
    fr, de, ja = make_item("fr"), make_item("de", on=dataset("other")), make_item("ja")
    lea = make_user("lea", role=Role.LEAD)
    gloss = category("gloss", "Gloss")
    comments_services.comment_create(
        author=lea, turn=fr.turn, body="french note <b>bold</b>", categories=[gloss], judge=fr.judge
    )
    comments_services.comment_create(author=lea, turn=de.turn, body="german note")
    comments_services.comment_create(author=lea, turn=ja.turn, body="japanese note", flagged_for_lead=True)
    client.force_login(make_user("ana", languages=["fr", "de"]))

    everything = client.get(reverse("comment_list")).content.decode()
    assert "french note &lt;b&gt;bold&lt;/b&gt;" in everything and "german note" in everything
    assert "japanese note" not in everything
    for params, expected in (
        ({"language": "de"}, {"german note"}),
        ({"category": "gloss"}, {"french note <b>bold</b>"}),
        ({"judge": "conciseness"}, {"french note <b>bold</b>"}),
        ({"dataset": de.dataset_id}, {"german note"}),
        ({"flagged": "1"}, set()),
    ):
        response = client.get(reverse("comment_list"), params, **HTMX)
        assert "<html" not in response.content.decode()
        assert {c.body for c in response.context["page"].comments} == expected, params
    client.force_login(lea)
    flagged = client.get(reverse("comment_list"), {"flagged": "1"})
    assert {c.body for c in flagged.context["page"].comments} == {"japanese note"}


def test_blind_datasets_hide_other_reviewers_comments_until_labelled(client, make_user):
    item = make_item("fr", on=dataset("blind", blind_review=True))
    ben = make_user("ben", languages=["fr"])
    comments_services.comment_create(author=ben, turn=item.turn, body="ben thinks it is fine")
    ana = make_user("ana", languages=["fr"])
    client.force_login(ana)
    assert "ben thinks" not in client.get(reverse("turn_comments", args=[item.turn_id]), **HTMX).content.decode()
    claims.item_claim(user=ana)
    reviews.review_submit(item=item, user=ana, rating=2)
    assert "ben thinks" in client.get(reverse("turn_comments", args=[item.turn_id]), **HTMX).content.decode()


def test_other_languages_are_403_for_threads_and_flags(client, make_user):
    item = make_item("ja")
    comment = comments_services.comment_create(author=make_user("lea", role=Role.LEAD), turn=item.turn, body="x")
    client.force_login(make_user("ana", languages=["fr"]))
    assert client.get(reverse("turn_comments", args=[item.turn_id])).status_code == 403
    assert client.post(reverse("turn_comments", args=[item.turn_id]), {"body": "y"}).status_code == 403
    assert client.post(reverse("comment_flag", args=[comment.pk]), {"flagged": "1"}).status_code == 403
    assert Comment.objects.count() == 1


@pytest.mark.parametrize("size", [2, 40])
def test_comments_page_runs_a_fixed_number_of_queries(client, make_user, django_assert_max_num_queries, size):
    lea = make_user("lea", role=Role.LEAD)
    cat = category()
    for _ in range(size):
        item = make_item("fr")
        comments_services.comment_create(author=lea, turn=item.turn, body="note", categories=[cat], judge=item.judge)
    client.force_login(lea)
    with django_assert_max_num_queries(11):
        assert client.get(reverse("comment_list")).status_code == 200


def test_the_comments_page_pages_by_keyset_newest_first(client, make_user, monkeypatch, django_assert_num_queries):
    monkeypatch.setattr(comment_selectors, "COMMENTS_PER_PAGE", 3)
    lea = make_user("lea", role=Role.LEAD)
    item = make_item("fr")
    for n in range(7):
        comments_services.comment_create(author=lea, turn=item.turn, body=f"note {n}")
    client.force_login(lea)
    first = client.get(reverse("comment_list"), {"language": "fr"})
    assert [c.body for c in first.context["page"].comments] == ["note 6", "note 5", "note 4"]
    assert first.context["page"].total == 7 and "First page" not in first.content.decode()
    next_query = first.context["next_query"]
    assert "language=fr" in next_query and "after=" in next_query and "page=" not in next_query
    with CaptureQueriesContext(connection) as counted:
        client.get(reverse("comment_list"), {"language": "fr"})
    with django_assert_num_queries(len(counted.captured_queries)):
        second = client.get(f"{reverse('comment_list')}?{next_query}", **HTMX)
    assert [c.body for c in second.context["page"].comments] == ["note 3", "note 2", "note 1"]
    assert "First page" in second.content.decode()
    third = client.get(f"{reverse('comment_list')}?{second.context['next_query']}")
    assert [c.body for c in third.context["page"].comments] == ["note 0"]
    assert third.context["next_query"] == "" and third.context["page"].total == 7
    # A cursor that is not one is the first page.
    junk = client.get(reverse("comment_list"), {"after": "1:2:3"})
    assert junk.context["page"].after is None and len(junk.context["page"].comments) == 3


def test_leads_edit_the_taxonomy_and_reviewers_only_read_it(client, make_user):
    existing = category("filler", "Filler")
    client.force_login(make_user("ana", languages=["fr"]))
    page = client.get(reverse("category_list")).content.decode()
    assert "Filler" in page and "New category" not in page
    assert client.post(reverse("category_list"), {"slug": "x", "name": "X"}).status_code == 403

    client.force_login(make_user("lea", role=Role.LEAD))
    assert client.post(reverse("category_list"), {"slug": "acronym", "name": "Acronym"}).status_code == 302
    assert (
        client.post(
            reverse("category_list"), {"category": existing.pk, "name": "Fillers", "description": "euh, um"}
        ).status_code
        == 302
    )
    existing.refresh_from_db()
    assert (existing.name, existing.active) == ("Fillers", False)
    assert Category.objects.filter(slug="acronym").exists()
    duplicate = client.post(reverse("category_list"), {"slug": "acronym", "name": "Again"})
    assert duplicate.status_code == 400 and "exists already" in duplicate.content.decode()
    assert AuditEvent.objects.filter(action__startswith="category.").count() == 2
