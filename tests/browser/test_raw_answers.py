"""A lead reading a conversation whose judge sent a 5 MB, markup-laden answer: the page stays small,
the answer is folded and opens from the keyboard, and nothing in it runs."""

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from reviewapp.judging.services.calls import verdict_raw_text
from reviewapp.models import Role, Verdict
from tests.browser.conftest import focus_with_tab
from tests.factories import make_item

PASSWORD = "correct-horse-battery-7"
PAYLOAD = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'


@pytest.fixture
def huge_answer():
    item = make_item("fr", verdict_status=Verdict.Status.UNRESOLVED)
    answer = PAYLOAD + "x" * (5 * 1024 * 1024)
    Verdict.objects.filter(turn=item.turn).update(
        raw_text=verdict_raw_text(answer, archived=True),
        problem_code="bad_json",
        explanation="not valid JSON (Expecting value at line 1 column 1)",
    )
    return item


def test_a_5mb_answer_is_folded_and_opens_without_running(page, login, make_user, huge_answer, dialogs):
    make_user("lea", role=Role.LEAD, password=PASSWORD)
    login(page, "lea", PASSWORD)

    response = page.goto(reverse("conversation_detail", args=[huge_answer.conversation_id]))

    assert response is not None and response.ok
    assert len(response.body()) < 200_000
    fold = page.locator("details.fold", has_text="Raw answer").first
    expect(fold).not_to_have_attribute("open", "")
    expect(fold.locator("pre")).not_to_be_visible()

    focus_with_tab(page, "details.fold summary")
    page.keyboard.press("Enter")

    expect(fold.locator("pre")).to_be_visible()
    expect(fold.locator("pre")).to_contain_text("[cut: the first 4,000 of 5,242,951 characters")
    expect(fold.locator("pre")).to_contain_text("<script>window.__pwned=2</script>")
    assert page.evaluate("window.__pwned === undefined")
    assert dialogs == []
