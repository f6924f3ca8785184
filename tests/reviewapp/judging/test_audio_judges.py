"""Listening judges: the sweep cuts each turn's segment and sends it as input_audio through the real openai
client to the local test endpoint; the archive keeps its hash and length; no audio means no call."""

import base64
import hashlib
import json

import pytest
from django.core.files.base import ContentFile

from reviewapp.models import Conversation, JudgeCall, Turn, Verdict
from tests.factories import dataset_of_calls, store_judge
from tests.llm_server import run_llm_server
from tests.reviewapp.corpus.audio_support import RATE, frames, read_frames, wav_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    dataset = dataset_of_calls(
        "voice",
        {
            "heard": ("fr", ["Votre vol part à neuf heures.", "Votre siège est le 14C."]),
            "untimed": ("fr", ["Bonjour."]),
            "silent": ("fr", ["Au revoir."]),
        },
    )
    heard = Conversation.objects.get(external_id="heard")
    heard.audio.save("heard.wav", ContentFile(wav_bytes(6000)))
    timings = {0: (0, 900), 1: (1000, 2500), 2: (2600, 3000), 3: (3100, 5250)}
    for turn in heard.turns.all():
        Turn.objects.filter(pk=turn.pk).update(
            audio_start_ms=timings[turn.position][0], audio_end_ms=timings[turn.position][1]
        )
    untimed = Conversation.objects.get(external_id="untimed")
    untimed.audio.save("untimed.wav", ContentFile(wav_bytes(2000)))
    return dataset


def test_each_turn_segment_reaches_the_endpoint_and_only_its_hash_is_archived(corpus, endpoint, run_sweep):
    listening = store_judge("tts_fidelity", needs_audio=True)
    sweep = run_sweep(dataset=corpus, judge_versions=[listening], qa_sample=0)

    # Two agent turns with audio and timings: two calls, each carrying exactly that turn's frames.
    assert len(endpoint.requests) == 2 and len(endpoint.audio_received) == 2
    received = {}
    for body, parts in zip(endpoint.requests, endpoint.audio_received, strict=True):
        [(fmt, data)] = parts
        content = body["messages"][-1]["content"]
        assert fmt == "wav" and content[0]["type"] == "input_audio" and content[1]["type"] == "text"
        assert base64.b64decode(content[0]["input_audio"]["data"]) == data
        received[content[1]["text"]] = data
    by_text = {v.turn.text: v for v in Verdict.objects.filter(sweep=sweep).select_related("turn", "call")}
    for text, (start, end) in {
        "Votre vol part à neuf heures.": (1000, 2500),
        "Votre siège est le 14C.": (3100, 5250),
    }.items():
        verdict = by_text[text]
        assert verdict.status == Verdict.Status.RESOLVED
        data = next(d for prompt, d in received.items() if text in prompt)
        rate, sent = read_frames(data)
        assert rate == RATE and sent == frames(start * RATE // 1000, end * RATE // 1000)
        assert verdict.call.audio == {
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
            "duration_ms": end - start,
            "start_ms": start,
            "end_ms": end,
            "format": "wav",
            "conversation_id": verdict.conversation_id,
            "turn_id": verdict.turn_id,
        }
        assert "input_audio" not in verdict.call.user_prompt.text and len(verdict.call.user_prompt.text) < 5000

    untimed = by_text["Bonjour."]
    silent = by_text["Au revoir."]
    assert (untimed.status, untimed.call) == (Verdict.Status.UNRESOLVED, None)
    assert untimed.explanation == "no audio: turn 1 has no audio start and end"
    assert (silent.status, silent.call) == (Verdict.Status.UNRESOLVED, None)
    assert silent.explanation == "no audio: the conversation has no audio file"
    assert JudgeCall.objects.count() == 2


def test_a_judge_that_reads_sends_no_audio(corpus, endpoint, run_sweep):
    reading = store_judge("tts_fidelity")
    run_sweep(dataset=corpus, judge_versions=[reading], qa_sample=0)
    assert len(endpoint.requests) == 4 and endpoint.audio_received == []
    assert all(isinstance(body["messages"][-1]["content"], str) for body in endpoint.requests)
    assert not JudgeCall.objects.exclude(audio={}).exists()


def test_the_endpoint_refuses_audio_that_is_not_base64():
    import urllib.error
    import urllib.request

    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "%%%", "format": "wav"}}]}
        ],
    }
    with run_llm_server() as server:
        request = urllib.request.Request(
            f"{server.base_url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=5)
        assert refused.value.code == 400 and "base64" in json.loads(refused.value.read())["error"]["message"]
        assert server.audio_received == []


def test_a_conversation_level_judge_hearing_the_agent_gets_the_agent_turns_joined(corpus, endpoint, run_sweep):
    import dataclasses

    from reviewapp.judging.services.judges import judge_version_store
    from scoring.audio import JOIN_PAUSE_MS
    from tests.factories import shipped_spec

    spec = dataclasses.replace(
        shipped_spec("tts_fidelity"),
        slug="agent_speech",
        level="conversation",
        needs_audio=True,
        audio_role="agent",
        user_template='Listen to the agent.\n{intended_turns_formatted}\nAnswer {{"rating": 0 | 1}}.',
    )
    sweep = run_sweep(dataset=corpus, judge_versions=[judge_version_store(spec=spec)], qa_sample=0)
    # "heard" has timed agent turns (1000-2500, 3100-5250); "untimed" has none, "silent" no file.
    [(fmt, data)] = endpoint.audio_received[0]
    assert len(endpoint.audio_received) == 1 and fmt == "wav"
    rate, sent = read_frames(data)
    assert rate == RATE
    pause = b"\x80" * (JOIN_PAUSE_MS * RATE // 1000)
    assert sent == frames(1000 * RATE // 1000, 2500 * RATE // 1000) + pause + frames(
        3100 * RATE // 1000, 5250 * RATE // 1000
    )
    verdicts = {v.conversation.external_id: v for v in Verdict.objects.filter(sweep=sweep).select_related("call")}
    assert verdicts["heard"].call.audio["spans"] == [[1000, 2500], [3100, 5250]]
    assert verdicts["untimed"].explanation == "no audio: no agent turn of the conversation has an audio start and end"
    assert verdicts["silent"].explanation == "no audio: the conversation has no audio file"
    # A replay cuts and joins the same spans again: the endpoint hears the same bytes.
    from reviewapp.judging.services import calls, sweeps

    calls.call_replay(call=verdicts["heard"].call, client=sweeps.llm_client())
    assert endpoint.audio_received[-1] == endpoint.audio_received[0] and len(endpoint.audio_received) == 2


def test_an_eva_listening_judge_rating_every_turn_hears_the_rated_speakers_turns_joined(
    settings, tmp_path, endpoint, run_sweep
):
    from reviewapp.corpus.services.imports import dataset_import
    from reviewapp.models import Dataset, JudgeVersion
    from scoring.audio import JOIN_PAUSE_MS
    from tests.reviewapp.corpus.audio_support import eva_record_with_audio
    from tests.reviewapp.judging.eva_support import JUDGE_YAML, load

    settings.MEDIA_ROOT = tmp_path / "media"
    folder = eva_record_with_audio(tmp_path)
    dataset_import(path=folder.parent, fmt="eva-run", dataset_name="eva-heard")
    load(JUDGE_YAML, "eva-997ae97")
    listening = JudgeVersion.objects.get(judge__slug="tts_fidelity", version="eva-997ae97")
    dataset = Dataset.objects.get(name="eva-heard")
    conversation = dataset.conversations.get()
    agent_spans = [
        (t.audio_start_ms, t.audio_end_ms)
        for t in conversation.turns.order_by("position")
        if t.role == "agent" and t.audio_start_ms is not None and t.audio_end_ms is not None
    ]
    assert len(agent_spans) >= 2

    sweep = run_sweep(dataset=dataset, judge_versions=[listening], qa_sample=0)

    # One call for the conversation, carrying the agent's turns cut from the recording and joined.
    assert len(endpoint.requests) == 1
    [(fmt, data)] = endpoint.audio_received[0]
    rate, sent = read_frames(data)
    assert fmt == "wav" and rate == RATE
    pause = b"\x80" * (JOIN_PAUSE_MS * RATE // 1000)
    assert sent == pause.join(frames(a * RATE // 1000, b * RATE // 1000) for a, b in agent_spans)
    call = JudgeCall.objects.get(sweep=sweep)
    assert call.audio["sha256"] == hashlib.sha256(data).hexdigest()
    assert call.audio["spans"] == [list(span) for span in agent_spans]
    # Its answer became turn verdicts, each linked to that one call.
    verdicts = Verdict.objects.filter(sweep=sweep, judge_version=listening)
    assert verdicts.filter(turn__isnull=False).count() >= 2
    assert set(verdicts.exclude(call=None).values_list("call_id", flat=True)) == {call.pk}


def test_an_eva_listening_judge_with_no_recording_sends_nothing_and_leaves_every_turn_unresolved(endpoint, run_sweep):
    from reviewapp.corpus.services.imports import dataset_import
    from reviewapp.models import Dataset, JudgeVersion
    from tests.reviewapp.judging.eva_support import JUDGE_YAML, RUN_RECORDS, load

    dataset_import(path=RUN_RECORDS, fmt="eva-run", dataset_name="eva-silent")
    load(JUDGE_YAML, "eva-997ae97")
    listening = JudgeVersion.objects.get(judge__slug="tts_fidelity", version="eva-997ae97")
    sweep = run_sweep(dataset=Dataset.objects.get(name="eva-silent"), judge_versions=[listening], qa_sample=0)

    assert endpoint.requests == []
    verdicts = Verdict.objects.filter(sweep=sweep, judge_version=listening)
    assert verdicts.exists()
    assert set(verdicts.values_list("status", flat=True)) == {Verdict.Status.UNRESOLVED}
    assert {v.explanation for v in verdicts} == {"no audio: the conversation has no audio file"}
