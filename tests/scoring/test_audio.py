"""Cutting a turn's segment out of a WAV with the standard library, and the content part that carries it."""

import base64
import io
import wave

import pytest

from scoring.audio import AudioError, input_audio_part, wav_info, wav_segment
from scoring.llm import user_content
from scoring.specs import spec_from_dict, spec_hash, spec_to_dict

RATE = 8000


def _wav(samples: bytes, *, width: int = 2, channels: int = 1) -> io.BytesIO:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(width)
        out.setframerate(RATE)
        out.writeframes(samples)
    buffer.seek(0)
    return buffer


def test_segment_holds_exactly_the_frames_between_start_and_end():
    samples = bytes(i % 256 for i in range(RATE * 2 * 2))  # 2 s of 16-bit mono
    clip = wav_segment(_wav(samples), start_ms=250, end_ms=1000)
    with wave.open(io.BytesIO(clip.data), "rb") as reader:
        assert (reader.getframerate(), reader.getsampwidth(), reader.getnchannels()) == (RATE, 2, 1)
        assert reader.readframes(reader.getnframes()) == samples[250 * 8 * 2 : 1000 * 8 * 2]
    assert clip.duration_ms == 750 and (clip.start_ms, clip.end_ms) == (250, 1000)
    assert wav_info(io.BytesIO(clip.data)).duration_ms == 750


def test_end_past_the_audio_is_cut_at_its_end_and_a_start_past_it_is_an_error():
    samples = bytes(RATE)  # 1 s of 8-bit
    assert wav_segment(_wav(samples, width=1), start_ms=500, end_ms=5000).duration_ms == 500
    with pytest.raises(AudioError, match="after the end of the audio"):
        wav_segment(_wav(samples, width=1), start_ms=1000, end_ms=1200)
    with pytest.raises(AudioError, match="before it starts"):
        wav_segment(_wav(samples, width=1), start_ms=600, end_ms=400)
    with pytest.raises(AudioError, match="not a PCM WAV"):
        wav_segment(io.BytesIO(b"ID3 not a wav"), start_ms=0, end_ms=10)


def test_audio_goes_first_as_input_audio_then_the_prompt():
    clip = wav_segment(_wav(bytes(RATE * 2)), start_ms=None, end_ms=None)
    assert user_content("Rate it.", None) == "Rate it."
    [audio, text] = user_content("Rate it.", clip)
    assert (
        audio
        == input_audio_part(clip)
        == {
            "type": "input_audio",
            "input_audio": {"data": base64.b64encode(clip.data).decode(), "format": "wav"},
        }
    )
    assert text == {"type": "text", "text": "Rate it."}


def test_needs_audio_round_trips_and_leaves_other_hashes_alone():
    base = {"slug": "x", "version": "1", "user_template": "{turn_text}", "scale": "binary"}
    reading = spec_from_dict(base)
    listening = spec_from_dict({**base, "needs_audio": True})
    assert "needs_audio" not in spec_to_dict(reading) and spec_to_dict(listening)["needs_audio"] is True
    assert spec_from_dict(spec_to_dict(listening)).needs_audio is True
    assert spec_hash(reading) != spec_hash(listening)


def test_eva_audio_judges_listen_and_the_others_read():
    from pathlib import Path

    from scoring.specs import load_specs

    specs = {s.slug: s for s in load_specs(Path(__file__).parents[1] / "fixtures" / "eva_judges.yaml")}
    assert specs["agent_speech_fidelity"].needs_audio and specs["agent_speech_fidelity__s2s_user"].needs_audio
    assert not specs["conciseness"].needs_audio and not specs["user_behavioral_fidelity"].needs_audio


def test_join_keeps_each_stretch_with_a_pause_of_silence_between():
    from scoring.audio import wav_join

    samples = bytes(i % 200 + 20 for i in range(RATE))  # 1 s of 8-bit, never the silence value 128 only
    clip = wav_join(_wav(samples, width=1), [(100, 200), (500, 650)], pause_ms=250)
    with wave.open(io.BytesIO(clip.data), "rb") as reader:
        joined = reader.readframes(reader.getnframes())
    assert joined == samples[800:1600] + b"\x80" * 2000 + samples[4000:5200]
    assert clip.duration_ms == 100 + 250 + 150 and clip.spans == ((100, 200), (500, 650))
    assert clip.describe()["spans"] == [[100, 200], [500, 650]]
    with pytest.raises(AudioError, match="not inside the audio"):
        wav_join(_wav(samples, width=1), [(900, 1200), (1000, 1100)])


def test_eva_speech_fidelity_judges_hear_one_speaker():
    from pathlib import Path

    from scoring.specs import SpecError, load_specs, validate_spec

    specs = {s.slug: s for s in load_specs(Path(__file__).parents[1] / "fixtures" / "eva_judges.yaml")}
    assert specs["agent_speech_fidelity"].audio_role == "agent"
    assert specs["conciseness"].audio_role == ""
    import dataclasses

    with pytest.raises(SpecError, match="audio_role must be agent or user"):
        validate_spec(dataclasses.replace(specs["agent_speech_fidelity"], audio_role="robot"))
    with pytest.raises(SpecError, match="needs needs_audio"):
        validate_spec(dataclasses.replace(specs["conciseness"], audio_role="user"))


def test_a_tribunal_yaml_judge_declares_that_it_listens():
    from pathlib import Path

    from scoring.specs import specs_from_yaml_text

    text = (Path(__file__).parents[2] / "judges" / "tts_fidelity.yaml").read_text(encoding="utf-8")
    [reading] = specs_from_yaml_text(text, source="tts_fidelity.yaml")
    [listening] = specs_from_yaml_text(text + "\nneeds_audio: true\n", source="tts_fidelity.yaml")
    assert (reading.needs_audio, listening.needs_audio, listening.audio_role) == (False, True, "")
