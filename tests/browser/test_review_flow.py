"""A reviewer's day with the keyboard only: claim, play the segment, label, comment, next; a colleague
at the same time; a language not assigned; transcript text that must never run."""

import re

import pytest
from django.core.files.base import ContentFile
from django.urls import reverse
from playwright.sync_api import expect

from reviewapp.demo.audio import conversation_wav
from reviewapp.models import Comment, Review, ReviewItem, Role
from tests.browser.conftest import focus_with_tab, wait_until_true
from tests.factories import category, make_item

PASSWORD = "correct-horse-battery-7"
SCRIPT_PAYLOAD = "<script>window.__pwned=1</script>"
IMG_PAYLOAD = '<img src=x onerror="window.__pwned=2">'
JAVASCRIPT_PAYLOAD = "javascript:window.__pwned=3"


@pytest.fixture
def queue(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    first = make_item(
        "fr", priority=300, text="Votre vol part à 9 h 40, porte 12, et je vous souhaite un excellent voyage."
    )
    second = make_item("fr", priority=200, text="Je répète : Z K 3.")
    third = make_item("fr", priority=100, text="Autre chose ?")
    for item in (first, second, third):
        wav = conversation_wav([(0, 1500, "user"), (1900, 4200, "agent"), (4600, 5400, "user")])
        item.conversation.audio.save(f"{item.conversation.external_id}.wav", ContentFile(wav))
    category("verbosity", "Verbosity")
    return [first, second, third]


def start_reviewing(page) -> None:
    page.goto(reverse("queue_index"))
    focus_with_tab(page, "#start-reviewing")
    with page.expect_navigation():
        page.keyboard.press("Enter")


def test_reviewer_labels_with_the_keyboard_only_and_moves_on(page, login, make_user, queue, dialogs):
    ana = make_user("ana", role=Role.REVIEWER, languages=["fr"], password=PASSWORD)
    login(page, "ana", PASSWORD)

    start_reviewing(page)
    first = queue[0]
    expect(page).to_have_url(re.compile(re.escape(reverse("review_item", args=[first.pk])) + "$"))
    expect(page.locator("#target-turn")).to_contain_text("excellent voyage")

    # Space plays exactly this turn's segment: it starts at 1.9 s and stops by itself at 4.2 s.
    wait_until_true(page, "document.querySelector('#segment-audio').readyState >= 1")
    page.keyboard.press("Space")
    wait_until_true(page, "!document.querySelector('#segment-audio').paused")
    assert page.evaluate("document.querySelector('#segment-audio').currentTime") >= 1.85
    wait_until_true(page, "document.querySelector('#segment-audio').dataset.segmentPlayed === 'true'")
    assert page.evaluate("document.querySelector('#segment-audio').paused")

    page.keyboard.press("?")
    expect(page.locator("#help-dialog")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#help-dialog")).to_be_hidden()

    page.keyboard.press("3")
    page.keyboard.press("a")
    page.keyboard.press("t")
    page.keyboard.press("Space")
    page.keyboard.press("c")
    page.keyboard.type("Trop long pour un appel.")
    page.keyboard.press("Escape")
    with page.expect_navigation():
        page.keyboard.press("n")

    expect(page).to_have_url(re.compile(re.escape(reverse("review_item", args=[queue[1].pk])) + "$"))
    review = Review.objects.get(item=first, reviewer=ana)
    assert review.rating == 3 and list(review.verdict_agreement.values()) == ["agree"]
    assert [c.slug for c in review.categories.all()] == ["verbosity"]
    assert review.seconds_spent is not None
    comment = Comment.objects.get(turn=first.turn)
    assert comment.body == "Trop long pour un appel." and [c.slug for c in comment.categories.all()] == ["verbosity"]

    # Skip asks for a reason, then moves on again.
    page.keyboard.press("s")
    expect(page.locator("#skip-reason")).to_be_focused()
    page.keyboard.type("Je ne connais pas ce sigle.")
    focus_with_tab(page, "#skip-dialog button[type=submit]")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(re.escape(reverse("review_item", args=[queue[2].pk])) + "$"))
    assert dialogs == []


def test_reviewer_starts_from_the_queue_with_n_alone(page, login, make_user, queue, dialogs):
    make_user("ana", languages=["fr"], password=PASSWORD)
    login(page, "ana", PASSWORD)
    page.goto(reverse("queue_index"))
    expect(page.locator("#queue-shortcuts")).to_contain_text("start reviewing")

    page.keyboard.press("?")
    expect(page.locator("#queue-help")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#queue-help")).to_be_hidden()
    with page.expect_navigation():
        page.keyboard.press("n")

    expect(page).to_have_url(re.compile(re.escape(reverse("review_item", args=[queue[0].pk])) + "$"))
    expect(page.locator("#target-turn")).to_contain_text("excellent voyage")
    assert ReviewItem.objects.get(pk=queue[0].pk).claimed_by.username == "ana"
    assert dialogs == []


def test_slash_picks_a_filter_and_enter_starts_in_that_slice(page, login, make_user, queue):
    canadian = make_item("fr-CA", priority=50, text="Votre vol est confirmé.")
    make_user("ana", languages=["fr"], password=PASSWORD)
    login(page, "ana", PASSWORD)
    page.goto(reverse("queue_index"))

    page.keyboard.press("/")
    expect(page.locator("#queue-language")).to_be_focused()
    with page.expect_response(lambda response: "language=fr-CA" in response.url):
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowDown")
    expect(page.locator(".results__count")).to_have_text("1 item")
    page.keyboard.press("Escape")
    expect(page.locator("#queue-language")).not_to_be_focused()
    with page.expect_navigation():
        page.keyboard.press("Enter")

    # The list was redrawn in place, yet the claim used the filter on screen: the fr-CA item, not the top one.
    expect(page).to_have_url(re.compile(re.escape(reverse("review_item", args=[canadian.pk])) + "$"))
    assert ReviewItem.objects.get(pk=canadian.pk).claimed_by.username == "ana"


def test_two_reviewers_at_the_same_time_get_different_items(browser, live_server, login, make_user, queue):
    make_user("ana", languages=["fr"], password=PASSWORD)
    make_user("ben", languages=["fr"], password=PASSWORD)
    pages = []
    for username in ("ana", "ben"):
        context = browser.new_context(base_url=live_server.url)
        page = context.new_page()
        login(page, username, PASSWORD)
        page.goto(reverse("queue_index"))
        pages.append(page)
    # Both ask for an item at once.
    for page in pages:
        page.locator("#start-reviewing").evaluate("button => button.form.requestSubmit()")
    for page in pages:
        page.wait_for_url(re.compile(r"/review/\d+/$"))
    urls = {page.url for page in pages}
    assert len(urls) == 2
    holders = dict(ReviewItem.objects.filter(claimed_by__isnull=False).values_list("pk", "claimed_by__username"))
    assert sorted(holders.values()) == ["ana", "ben"]
    for page in pages:
        page.context.close()


def test_items_in_a_language_not_assigned_are_refused_by_url_and_fragment(page, login, make_user, queue):
    make_user("ana", languages=["fr"], password=PASSWORD)
    japanese = make_item("ja", text="ご予約番号は ZK3 です。")
    login(page, "ana", PASSWORD)

    response = page.goto(reverse("review_item", args=[japanese.pk]))
    assert response is not None and response.status == 403
    expect(page.get_by_text("ご予約番号は")).to_have_count(0)

    for url in (
        reverse("review_verdicts", args=[japanese.pk]),
        reverse("turn_comments", args=[japanese.turn_id]),
        reverse("conversation_audio", args=[japanese.conversation_id]),
    ):
        fragment = page.request.get(url, headers={"HX-Request": "true"})
        assert fragment.status == 403, url
        assert "ご予約番号は" not in fragment.text()


def test_transcript_text_on_the_review_screen_never_runs(page, login, make_user, tmp_path, dialogs):
    make_user("ana", languages=["fr"], password=PASSWORD)
    item = make_item("fr", text=f"{SCRIPT_PAYLOAD} {IMG_PAYLOAD} {JAVASCRIPT_PAYLOAD}")
    login(page, "ana", PASSWORD)

    start_reviewing(page)
    expect(page).to_have_url(re.compile(re.escape(reverse("review_item", args=[item.pk])) + "$"))
    page.wait_for_load_state("load")

    target = page.locator("#target-turn .turn__text")
    for payload in (SCRIPT_PAYLOAD, IMG_PAYLOAD, JAVASCRIPT_PAYLOAD):
        expect(target).to_contain_text(payload)
    assert page.locator("main img[src='x']").count() == 0
    assert page.locator("a[href^='javascript:' i]").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert dialogs == []
