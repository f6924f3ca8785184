"""An imported EVA record's audio_mixed.wav plays on the review page (the turn's segment, from EVA's
timestamps) and on the conversation page (each turn's button seeks to its segment)."""

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from reviewapp.corpus.services.imports import dataset_import
from reviewapp.models import Conversation, Judge, ReviewItem, Role
from tests.browser.conftest import wait_until_true
from tests.reviewapp.corpus.audio_support import EVA_RECORD_MS, eva_record_with_audio

PASSWORD = "correct-horse-battery-7"


@pytest.fixture
def record(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    dataset_import(path=eva_record_with_audio(tmp_path), fmt="eva-run")
    conversation = Conversation.objects.get(external_id="1.1.2")
    # EVA's assistant turn 1: the second agent turn, 8.7 s into the recording.
    turn = conversation.turns.filter(role="agent").order_by("position")[1]
    judge = Judge.objects.create(slug="agent_speech_fidelity", scale=Judge.Scale.BINARY, scale_min=0, scale_max=1)
    item = ReviewItem.objects.create(
        judge=judge,
        conversation=conversation,
        turn=turn,
        dataset=conversation.dataset,
        language=conversation.language,
        reasons=[ReviewItem.Reason.UNRESOLVED],
    )
    return item


def test_imported_eva_audio_plays_the_turn_segment_on_the_review_page(page, login, make_user, record):
    make_user("ana", role=Role.REVIEWER, languages=["en"], password=PASSWORD)
    login(page, "ana", PASSWORD)
    turn = record.turn
    assert (turn.audio_start_ms, turn.audio_end_ms) == (8687, 15044)

    page.goto(reverse("review_item", args=[record.pk]))
    audio = "document.querySelector('#segment-audio')"
    wait_until_true(page, f"{audio}.readyState >= 1")
    assert abs(page.evaluate(f"{audio}.duration") - EVA_RECORD_MS / 1000) < 0.05
    page.locator("[data-action=play]").click()
    wait_until_true(page, f"!{audio}.paused")
    assert 8.6 <= page.evaluate(f"{audio}.currentTime") < 15.1
    wait_until_true(page, f"{audio}.dataset.segmentPlayed === 'true'")
    assert page.evaluate(f"{audio}.paused")


def test_conversation_page_buttons_seek_to_each_turn(page, login, make_user, record):
    make_user("lea", role=Role.LEAD, password=PASSWORD)
    login(page, "lea", PASSWORD)
    page.goto(reverse("conversation_detail", args=[record.conversation_id]))
    audio = "document.querySelector('audio[data-segment-player]')"
    wait_until_true(page, f"{audio}.readyState >= 1")
    assert abs(page.evaluate(f"{audio}.duration") - EVA_RECORD_MS / 1000) < 0.05

    button = page.locator(f"#turn-{record.turn_id} [data-play-segment]")
    expect(button).to_have_attribute("data-start-ms", "8687")
    button.click()
    wait_until_true(page, f"!{audio}.paused")
    assert 8.6 <= page.evaluate(f"{audio}.currentTime") < 15.1
    page.locator("audio[data-segment-player]").evaluate("a => a.pause()")
    expect(page.locator("[data-audio-none]")).to_have_count(0)
