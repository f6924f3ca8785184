"""Logging in with the keyboard, language access, and transcript text that tries to run script."""

import re

from django.urls import reverse
from playwright.sync_api import expect

from reviewapp.models import Conversation, Dataset, Role, Turn

PASSWORD = "correct-horse-battery-7"
SCRIPT_PAYLOAD = "<script>window.__pwned=1</script>"
IMG_PAYLOAD = '<img src=x onerror="window.__pwned=2">'
JAVASCRIPT_PAYLOAD = "javascript:window.__pwned=3"


def conversation_in(language: str, *, turns: list[tuple[str, str]] | None = None) -> Conversation:
    dataset, _ = Dataset.objects.get_or_create(name="browser-checks", defaults={"kind": Dataset.Kind.REVIEW})
    conversation = Conversation.objects.create(dataset=dataset, external_id=f"conv-{language}", language=language)
    for position, (role, text) in enumerate(turns or [("user", "Bonjour"), ("agent", "Bonjour, que puis-je faire ?")]):
        Turn.objects.create(conversation=conversation, position=position, role=role, text=text)
    return conversation


def test_keyboard_login_lands_a_reviewer_on_the_queue(page, login, make_user):
    make_user("ana", role=Role.REVIEWER, languages=["fr"], password=PASSWORD)

    login(page, "ana", PASSWORD)

    expect(page).to_have_url(re.compile(re.escape(reverse("queue_index")) + "$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Review queue")
    expect(page.get_by_role("button", name="Log out")).to_be_visible()


def test_wrong_password_shows_an_error_and_stays_on_the_login_page(page, login, make_user):
    make_user("ana", role=Role.REVIEWER, languages=["fr"], password=PASSWORD)

    login(page, "ana", "not-the-password")

    expect(page).to_have_url(re.compile(re.escape(reverse("login")) + "$"))
    expect(page.get_by_role("alert")).to_contain_text("correct username and password")
    expect(page.get_by_role("button", name="Log out")).to_have_count(0)


def test_reviewer_gets_the_403_page_for_a_language_not_assigned(page, login, make_user):
    make_user("ana", role=Role.REVIEWER, languages=["fr"], password=PASSWORD)
    japanese = conversation_in("ja", turns=[("user", "こんにちは"), ("agent", "ご用件をどうぞ")])
    french = conversation_in("fr-CA")
    login(page, "ana", PASSWORD)

    response = page.goto(reverse("conversation_detail", args=[japanese.pk]))

    assert response is not None and response.status == 403
    expect(page.get_by_role("heading", level=1)).to_have_text("You cannot open this page")
    expect(page.get_by_text("ご用件をどうぞ")).to_have_count(0)

    # A base language covers its regional variants: "fr" opens fr-CA.
    response = page.goto(reverse("conversation_detail", args=[french.pk]))
    assert response is not None and response.status == 200
    expect(page.get_by_text("Bonjour, que puis-je faire ?")).to_be_visible()


def test_transcript_text_is_shown_as_text_and_never_runs(page, login, make_user, dialogs):
    make_user("lea", role=Role.LEAD, password=PASSWORD)
    conversation = conversation_in(
        "fr",
        turns=[("user", SCRIPT_PAYLOAD), ("agent", IMG_PAYLOAD), ("user", JAVASCRIPT_PAYLOAD)],
    )
    login(page, "lea", PASSWORD)

    page.goto(reverse("conversation_detail", args=[conversation.pk]))
    page.wait_for_load_state("load")

    for payload in (SCRIPT_PAYLOAD, IMG_PAYLOAD, JAVASCRIPT_PAYLOAD):
        expect(page.get_by_text(payload, exact=True).first).to_be_visible()
    assert page.locator("main img[src='x']").count() == 0
    assert page.locator("a[href^='javascript:' i]").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert dialogs == []
