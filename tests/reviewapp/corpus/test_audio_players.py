"""Each page that shows a turn plays its segment of the conversation's imported audio, or says there is none."""

import re

import pytest
from django.urls import reverse

from reviewapp.corpus.services.imports import dataset_import
from reviewapp.models import Role
from tests.factories import HTMX, make_item
from tests.reviewapp.corpus.audio_support import eva_record_with_audio, wav_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def imported(tmp_path):
    dataset_import(path=eva_record_with_audio(tmp_path), fmt="eva-run")
    from reviewapp.models import Conversation

    return Conversation.objects.get(external_id="1.1.2")


def test_conversation_page_has_one_player_and_a_segment_button_per_timed_turn(client, make_user, imported):
    client.force_login(make_user("lea", role=Role.LEAD))
    html = client.get(reverse("conversation_detail", args=[imported.pk])).content.decode()
    assert html.count("data-segment-player") == 1
    assert f'src="{reverse("conversation_audio", args=[imported.pk])}"' in html
    buttons = re.findall(r'data-play-segment data-start-ms="(\d+)" data-end-ms="(\d+)"', html)
    timed = [(str(t.audio_start_ms), str(t.audio_end_ms)) for t in imported.turns.exclude(audio_start_ms=None)]
    assert buttons == timed and len(buttons) == 20
    assert "js/segments.js" in html and "<script>" not in html

    # The file behind the player is the imported recording, served with ranges like the demo's.
    response = client.get(reverse("conversation_audio", args=[imported.pk]), HTTP_RANGE="bytes=0-3")
    assert response.status_code == 206 and b"".join(response.streaming_content) == b"RIFF"


def test_conversation_without_audio_says_so(client, make_user):
    item = make_item("fr")
    client.force_login(make_user("lea", role=Role.LEAD))
    html = client.get(reverse("conversation_detail", args=[item.conversation_id])).content.decode()
    assert "No audio for this conversation" in html and "data-segment-player" not in html
    assert "data-play-segment" not in html


def test_imported_audio_is_forbidden_outside_the_reviewers_languages(client, make_user, imported):
    client.force_login(make_user("kenji", languages=["ja"]))
    assert client.get(reverse("conversation_audio", args=[imported.pk])).status_code == 403
    assert client.get(reverse("conversation_detail", args=[imported.pk])).status_code == 403


def test_dispute_page_plays_the_turn_segment(client, make_user):
    from django.core.files.base import ContentFile

    item = make_item("fr")
    item.conversation.audio.save("c.wav", ContentFile(wav_bytes(6000)))
    client.force_login(make_user("lea", role=Role.LEAD))
    html = client.get(reverse("dispute_detail", args=[item.pk])).content.decode()
    assert html.count("data-segment-player") == 1
    assert re.findall(r'data-play-segment data-start-ms="(\d+)" data-end-ms="(\d+)"', html) == [("1900", "4200")]


def test_review_page_says_when_there_is_no_audio(client, make_user):
    item = make_item("fr")
    client.force_login(make_user("ana", languages=["fr"]))
    html = client.get(reverse("review_item", args=[item.pk])).content.decode()
    assert "No audio for this conversation" in html and 'id="segment-audio"' not in html


def test_a_refreshed_turn_keeps_its_play_button(client, make_user, imported):
    turn = imported.turns.filter(role="agent").order_by("position")[1]
    client.force_login(make_user("lea", role=Role.LEAD))
    url = reverse("conversation_turn", args=[imported.pk, turn.pk])
    fragment = client.get(url, **HTMX).content.decode()
    assert f'data-play-segment data-start-ms="{turn.audio_start_ms}" data-end-ms="{turn.audio_end_ms}"' in fragment
