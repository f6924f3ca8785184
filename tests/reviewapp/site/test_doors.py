"""Doors: next= stays on the site, the queue's dataset filter lists only what one may see, bidi
controls in transcripts are shown, not obeyed."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.urls import reverse

from reviewapp.models import Comment
from reviewapp.templatetags.text_safety import visible_bidi
from tests.factories import dataset, make_item

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "target",
    [
        "https://evil.example/x",
        "//evil.example/x",
        "/\\evil.example/x",
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "http:evil.example",
        "\x00/x",
        "data:text/html,<script>alert(1)</script>",
    ],
)
def test_comment_flag_never_redirects_off_the_site(client, make_user, target):
    item = make_item("fr")
    ana = make_user("ana", languages=["fr"])
    comment = Comment.objects.create(turn=item.turn, author=ana, body="à revoir")
    client.force_login(ana)

    response = client.post(reverse("comment_flag", args=[comment.pk]), {"flagged": "1", "next": target})

    assert response.status_code == 302
    assert response.url == reverse("turn_comments", args=[item.turn_id])


def test_comment_flag_follows_a_same_site_path(client, make_user):
    item = make_item("fr")
    ana = make_user("ana", languages=["fr"])
    comment = Comment.objects.create(turn=item.turn, author=ana, body="à revoir")
    client.force_login(ana)
    response = client.post(reverse("comment_flag", args=[comment.pk]), {"flagged": "1", "next": "/comments/?flagged=1"})
    assert response.status_code == 302 and response.url == "/comments/?flagged=1"


def test_login_next_stays_on_the_site(client, make_user):
    make_user("ana", languages=["fr"], password="pw-test-12345")
    response = client.post(
        reverse("login") + "?next=https://evil.example/x", {"username": "ana", "password": "pw-test-12345"}
    )
    assert response.status_code == 302 and "evil.example" not in response.url


def test_queue_dataset_filter_lists_only_datasets_in_my_languages(client, make_user):
    make_item("fr", on=dataset("appels-fr"))
    make_item("ja", on=dataset("secret-ja-launch"))
    client.force_login(make_user("ana", languages=["fr"]))
    html = client.get(reverse("queue_index")).content.decode()
    assert "appels-fr" in html and "secret-ja-launch" not in html
    assert [d.name for d in client.get(reverse("queue_index")).context["queue"].datasets] == ["appels-fr"]


def test_comment_page_dataset_filter_lists_only_datasets_in_my_languages(client, make_user):
    fr, ja = make_item("fr", on=dataset("appels-fr")), make_item("ja", on=dataset("secret-ja-launch"))
    author = make_user("lea", languages=["fr", "ja"])
    Comment.objects.create(turn=fr.turn, author=author, body="fr")
    Comment.objects.create(turn=ja.turn, author=author, body="ja")
    client.force_login(make_user("ana", languages=["fr"]))
    assert "secret-ja-launch" not in client.get(reverse("comment_list")).content.decode()


@pytest.mark.parametrize(
    "char",
    [
        "\u202a",
        "\u202b",
        "\u202c",
        "\u202d",
        "\u202e",
        "\u2066",
        "\u2067",
        "\u2068",
        "\u2069",
        "\u200e",
        "\u200f",
        "\u061c",
    ],
)
def test_every_bidi_control_is_shown_as_a_marker(char):
    code = f"U+{ord(char):04X}"
    shown = visible_bidi(f"abc{char}<b>def</b>")
    assert char not in shown
    assert '<span class="bidi" title="' in shown and f"\u27e8{code}\u27e9</span>" in shown
    assert shown.startswith("abc<span") and shown.endswith("&lt;b&gt;def&lt;/b&gt;")


def test_the_filter_escapes_before_marking():
    rendered = Template("{{ text|bidi }}").render(Context({"text": '<script>x</script>\u202e"'}))
    assert (
        rendered
        == '&lt;script&gt;x&lt;/script&gt;<span class="bidi" title="Right-To-Left Override">\u27e8U+202E\u27e9</span>&quot;'
    )


def test_transcripts_show_bidi_controls_on_the_conversation_page_queue_and_review_screen(client, make_user):
    item = make_item("fr", text="Votre code est \u202e21 KZ\u202c merci.")
    ana = make_user("ana", languages=["fr"])
    client.force_login(ana)
    pages = {
        "conversation": client.get(reverse("conversation_detail", args=[item.conversation_id])),
        "queue": client.get(reverse("queue_index")),
        "review": client.get(reverse("review_item", args=[item.pk])),
        "comments": client.get(reverse("turn_comments", args=[item.turn_id])),
    }
    for name, response in pages.items():
        html = response.content.decode()
        assert response.status_code == 200, name
        assert "\u202e" not in html and "\u27e8U+202E\u27e9" in html, name


def test_quoted_spans_and_dispute_context_show_bidi_controls(client, make_user):
    from reviewapp.models import ReviewItem, Role

    item = make_item("fr", text="Votre code est \u202e21 KZ\u202c merci.")
    lea = make_user("lea", role=Role.LEAD)
    Comment.objects.create(turn=item.turn, author=lea, body="voir", quoted_span="\u202e21 KZ")
    ReviewItem.objects.filter(pk=item.pk).update(status=ReviewItem.Status.AWAITING_ADJUDICATION)
    client.force_login(lea)
    for url in (
        reverse("comment_list"),
        reverse("turn_comments", args=[item.turn_id]),
        reverse("dispute_detail", args=[item.pk]),
    ):
        html = client.get(url).content.decode()
        assert "\u202e" not in html and "\u27e8U+202E\u27e9" in html, url


def test_judges_explanations_show_bidi_controls_on_the_review_dispute_and_conversation_pages(client, make_user):
    from reviewapp.models import ReviewItem, Role, Verdict

    item = make_item("fr")
    Verdict.objects.filter(turn=item.turn).update(explanation="Le code \u202e21 KZ\u202c est lu à l'envers.")
    ReviewItem.objects.filter(pk=item.pk).update(status=ReviewItem.Status.AWAITING_ADJUDICATION)
    client.force_login(make_user("lea", role=Role.LEAD))
    for url in (
        reverse("review_item", args=[item.pk]),
        reverse("dispute_detail", args=[item.pk]),
        reverse("conversation_detail", args=[item.conversation_id]),
    ):
        html = client.get(url).content.decode()
        assert "lu à l" in html, url  # the explanation is on the page
        assert "\u202e" not in html and "\u27e8U+202E\u27e9" in html, url
