"""The call archive page (leads only) and its replay: the same call sent again through the real openai client
to the local endpoint, with the same audio segment for a listening judge, shown beside the original."""

import json

import pytest
from django.core.files.base import ContentFile
from django.urls import reverse
from django.utils.html import escape

from reviewapp.judging.services.replays import ReplayError, call_replay_request, call_replay_run
from reviewapp.models import CallReplay, Conversation, JudgeCall, Role, Turn, Verdict
from tests.factories import HTMX, dataset_of_calls, store_judge
from tests.reviewapp.corpus.audio_support import wav_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def listened(settings, tmp_path, endpoint, run_sweep, monkeypatch):
    """One agent turn with audio, swept by a listening judge: one archived call with its audio's hash.
    Replays from settings reach the same local endpoint."""
    monkeypatch.setattr("reviewapp.judging.services.calls.llm_client_from_settings", lambda **kw: endpoint.client)
    settings.MEDIA_ROOT = tmp_path
    dataset = dataset_of_calls("voice", {"heard": ("fr", ["Votre siège est le 14C. <b>gras</b>"])})
    conversation = Conversation.objects.get(external_id="heard")
    conversation.audio.save("heard.wav", ContentFile(wav_bytes(4000)))
    Turn.objects.filter(conversation=conversation, position=1).update(audio_start_ms=1200, audio_end_ms=3300)
    run_sweep(dataset=dataset, judge_versions=[store_judge("tts_fidelity", needs_audio=True)], qa_sample=0)
    return JudgeCall.objects.get()


@pytest.fixture
def lead(make_user):
    return make_user("lea", role=Role.LEAD)


def test_archive_page_full_fragment_and_forbidden(client, make_user, lead, listened):
    url = reverse("call_detail", args=[listened.pk])
    client.force_login(lead)
    html = client.get(url).content.decode()
    assert f"Archived call #{listened.pk}" in html and "<nav" in html
    assert listened.user_prompt.text.split("\n")[0] in html
    assert "Votre siège est le 14C. &lt;b&gt;gras&lt;/b&gt;" in html and "<b>gras</b>" not in html
    assert f"{listened.audio['bytes']} bytes, 2100 ms wav (from 1200 to 3300 ms of the recording)" in html
    assert f"{listened.latency_ms} ms" in html and 'data-action="replay"' in html

    fragment = client.get(url, **HTMX).content.decode()
    assert fragment.lstrip().startswith('<article id="call-archive"') and "<nav" not in fragment

    client.force_login(make_user("ana", languages=["fr"]))
    assert client.get(url).status_code == 403
    assert client.post(reverse("call_replay", args=[listened.pk])).status_code == 403
    assert not CallReplay.objects.exists()


def test_verdicts_link_to_their_call_for_leads_only(client, make_user, lead, listened):
    verdict = Verdict.objects.get(call=listened)
    page = reverse("conversation_detail", args=[verdict.conversation_id])
    client.force_login(lead)
    assert reverse("call_detail", args=[listened.pk]) in client.get(page).content.decode()
    client.force_login(make_user("ana", languages=["fr"]))
    assert reverse("call_detail", args=[listened.pk]) not in client.get(page).content.decode()


def test_replay_sends_the_same_prompt_and_audio_and_shows_both_answers(
    client, lead, listened, endpoint, django_capture_on_commit_callbacks, eager_celery
):
    client.force_login(lead)
    sent_before = len(endpoint.requests)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("call_replay", args=[listened.pk]), **HTMX)
    assert response.status_code == 200
    replay = CallReplay.objects.get()
    assert replay.status == CallReplay.Status.DONE and replay.requested_by == lead

    original_body, replayed_body = endpoint.requests[0], endpoint.requests[sent_before]
    assert replayed_body["messages"] == original_body["messages"]
    assert endpoint.audio_received[-1] == endpoint.audio_received[0]
    # The local endpoint answers the same prompt the same way: same text, same outcome.
    assert replay.raw_response == listened.raw_response

    status = client.get(reverse("replay_status", args=[replay.pk]), **HTMX).content.decode()
    assert "same text" in status and "same outcome" in status and 'hx-trigger="every 1s"' not in status
    assert escape(json.loads(listened.raw_response)["explanation"]) in status
    page = client.get(reverse("call_detail", args=[listened.pk])).content.decode()
    assert f"Replay #{replay.pk}" in page


def test_a_pending_replay_polls_and_a_second_request_waits(lead, listened):
    replay = call_replay_request(call=listened, user=lead, dispatch=False)
    with pytest.raises(ReplayError, match="already waiting"):
        call_replay_request(call=listened, user=lead, dispatch=False)
    from django.test import Client

    browser = Client()
    browser.force_login(lead)
    html = browser.get(reverse("replay_status", args=[replay.pk]), **HTMX).content.decode()
    assert 'hx-trigger="every 1s"' in html and 'data-replay-status="pending"' in html


def test_replay_refuses_a_recording_that_changed(lead, listened, endpoint):
    conversation = Conversation.objects.get(external_id="heard")
    original = wav_bytes(4000)
    middle = 44 + 2 * 4000  # 2 s into the recording, inside the 1.2-3.3 s segment that was sent
    conversation.audio.save("changed.wav", ContentFile(original[:middle] + bytes(400) + original[middle + 400 :]))
    sent_before = len(endpoint.requests)
    replay = call_replay_run(
        replay_id=call_replay_request(call=listened, user=lead, dispatch=False).pk, client=endpoint.client
    )
    assert replay.status == CallReplay.Status.FAILED and "recording changed" in replay.error
    assert len(endpoint.requests) == sent_before
    # Run twice: a finished replay stays as it is.
    assert call_replay_run(replay_id=replay.pk).error == replay.error


def test_archive_page_runs_a_fixed_number_of_queries(client, lead, listened, django_assert_max_num_queries):
    client.force_login(lead)
    url = reverse("call_detail", args=[listened.pk])
    client.get(url)  # warm the session and profile
    for _ in range(3):
        call_replay_request(call=listened, user=lead, dispatch=False)
        CallReplay.objects.filter(status=CallReplay.Status.PENDING).update(status=CallReplay.Status.DONE)
    with django_assert_max_num_queries(8):
        assert client.get(url).status_code == 200
