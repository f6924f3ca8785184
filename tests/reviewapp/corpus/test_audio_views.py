"""Conversation audio with HTTP range requests, after the language check."""

import pytest
from django.core.files.base import ContentFile
from django.urls import reverse

from reviewapp.demo.audio import SAMPLE_RATE, conversation_wav
from reviewapp.models import Conversation, Role
from tests.factories import make_item

pytestmark = pytest.mark.django_db


@pytest.fixture
def with_audio(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    item = make_item("fr")
    conversation = item.conversation
    conversation.audio.save("call.wav", ContentFile(conversation_wav([(0, 1500, "user"), (1900, 4200, "agent")])))
    return conversation


def body(response) -> bytes:
    return b"".join(response.streaming_content)


def test_full_file_advertises_ranges(client, make_user, with_audio):
    client.force_login(make_user("ana", languages=["fr"]))
    response = client.get(reverse("conversation_audio", args=[with_audio.pk]))
    data = body(response)
    assert response.status_code == 200 and response["Accept-Ranges"] == "bytes"
    assert response["Content-Type"] in ("audio/wav", "audio/x-wav") and data[:4] == b"RIFF"
    assert len(data) == 44 + (4200 + 500) * SAMPLE_RATE // 1000


def test_range_requests_return_206_with_content_range(client, make_user, with_audio):
    client.force_login(make_user("ana", languages=["fr"]))
    url = reverse("conversation_audio", args=[with_audio.pk])
    size = with_audio.audio.size
    whole = body(client.get(url))

    part = client.get(url, HTTP_RANGE="bytes=100-199")
    assert part.status_code == 206 and part["Content-Range"] == f"bytes 100-199/{size}"
    assert part["Content-Length"] == "100" and body(part) == whole[100:200]
    open_ended = client.get(url, HTTP_RANGE=f"bytes={size - 10}-")
    assert body(open_ended) == whole[-10:] and open_ended["Content-Range"] == f"bytes {size - 10}-{size - 1}/{size}"
    suffix = client.get(url, HTTP_RANGE="bytes=-4")
    assert suffix.status_code == 206 and body(suffix) == whole[-4:]
    beyond = client.get(url, HTTP_RANGE=f"bytes={size + 5}-")
    assert beyond.status_code == 416 and beyond["Content-Range"] == f"bytes */{size}"


def test_audio_of_another_language_is_403_and_missing_audio_404(client, make_user, with_audio):
    client.force_login(make_user("kenji", languages=["ja"]))
    response = client.get(reverse("conversation_audio", args=[with_audio.pk]), HTTP_RANGE="bytes=0-10")
    assert response.status_code == 403
    client.force_login(make_user("lea", role=Role.LEAD))
    silent = make_item("fr").conversation
    assert client.get(reverse("conversation_audio", args=[silent.pk])).status_code == 404
    assert client.get(reverse("conversation_audio", args=[999999])).status_code == 404
    client.logout()
    assert client.get(reverse("conversation_audio", args=[with_audio.pk])).status_code == 302
    assert Conversation.objects.filter(pk=with_audio.pk).exists()
