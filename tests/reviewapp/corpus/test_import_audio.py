"""Imported audio: EVA's audio_mixed.wav and JSONL/CSV `audio` paths copied into media storage, bad paths refused."""

import hashlib
import json
import os

import pytest

from reviewapp.corpus.importers.audio import storage_name
from reviewapp.corpus.services.imports import ImportFailed, dataset_import
from reviewapp.models import Conversation
from tests.reviewapp.corpus.audio_support import EVA_RECORD_MS, eva_record_with_audio, wav_bytes, write_wav

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _record(external_id, audio=None, turns=None):
    record = {
        "external_id": external_id,
        "language": "fr",
        "turns": turns
        or [
            {"role": "user", "text": "Bonjour", "audio_start_ms": 0, "audio_end_ms": 900},
            {"role": "agent", "text": "Bonjour, je vous écoute.", "audio_start_ms": 1000, "audio_end_ms": 2500},
        ],
    }
    if audio is not None:
        record["audio"] = audio
    return record


def test_eva_record_audio_is_copied_into_media_once(tmp_path, media):
    folder = eva_record_with_audio(tmp_path)
    expected = hashlib.sha256((folder / "audio_mixed.wav").read_bytes()).hexdigest()

    dataset_import(path=folder.parent, fmt="eva-run")
    conversation = Conversation.objects.get(external_id="1.1.2")
    assert conversation.audio.name == f"audio/imports/{expected[:2]}/{expected}.wav"
    assert (media / conversation.audio.name).read_bytes() == (folder / "audio_mixed.wav").read_bytes()
    assert conversation.metadata["audio"] == {
        "path": "audio_mixed.wav",
        "sha256": expected,
        "bytes": (folder / "audio_mixed.wav").stat().st_size,
        "duration_ms": EVA_RECORD_MS,
        "format": "wav",
    }
    # The turns keep EVA's timestamps as offsets into that recording.
    greeting = conversation.turns.get(position=0)
    assert greeting.audio_start_ms == 0 and greeting.audio_end_ms == 2598

    summary = dataset_import(path=folder.parent, fmt="eva-run")
    assert summary.created["conversations"] == 0
    assert sorted(p.name for p in (media / "audio" / "imports").rglob("*.wav")) == [f"{expected}.wav"]


def test_eva_record_without_audio_has_none(tmp_path):
    folder = eva_record_with_audio(tmp_path)
    (folder / "audio_mixed.wav").unlink()
    dataset_import(path=folder, fmt="eva-run")
    conversation = Conversation.objects.get(external_id="1.1.2")
    assert not conversation.audio and "audio" not in conversation.metadata


def test_eva_audio_link_outside_the_record_is_refused(tmp_path):
    folder = eva_record_with_audio(tmp_path)
    outside = write_wav(tmp_path / "elsewhere.wav", EVA_RECORD_MS)
    (folder / "audio_mixed.wav").unlink()
    os.symlink(outside, folder / "audio_mixed.wav")
    with pytest.raises(ImportFailed) as refused:
        dataset_import(path=folder.parent, fmt="eva-run")
    # The EVA folder check refuses any link before a file is read; the audio's own check stays behind it.
    error = refused.value.summary.errors[0]
    assert error["file"].endswith("audio_mixed.wav") and "symbolic link" in error["message"]
    assert not Conversation.objects.exists()


def test_jsonl_audio_path_relative_to_the_file(tmp_path, media):
    write_wav(tmp_path / "audio" / "call-1.wav", 3000)
    source = _jsonl(tmp_path / "calls.jsonl", [_record("call-1", "audio/call-1.wav"), _record("call-2")])
    dataset_import(path=source, fmt="jsonl")
    with_audio = Conversation.objects.get(external_id="call-1")
    assert (media / with_audio.audio.name).read_bytes() == wav_bytes(3000)
    assert with_audio.metadata["audio"]["path"] == "audio/call-1.wav"
    assert with_audio.metadata["audio"]["duration_ms"] == 3000
    without = Conversation.objects.get(external_id="call-2")
    assert not without.audio and "audio" not in without.metadata


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("../secret.wav", "leaves the import folder"),
        ("audio/../../secret.wav", "leaves the import folder"),
        ("/etc/passwd", "absolute path"),
        ("C:\\audio\\call.wav", "absolute path"),
        ("audio/missing.wav", "no audio file"),
        ("link.wav", "outside the import folder"),
        ("notes.txt", "not a WAV file"),
        ("broken.wav", "not a PCM WAV"),
    ],
)
def test_jsonl_bad_audio_paths_are_refused_with_file_line_and_field(tmp_path, given, message):
    import_dir = tmp_path / "import"
    write_wav(tmp_path / "secret.wav", 3000)
    import_dir.mkdir()
    os.symlink(tmp_path / "secret.wav", import_dir / "link.wav")
    (import_dir / "notes.txt").write_text("not audio")
    (import_dir / "broken.wav").write_bytes(b"RIFF....WAVEjunk")
    source = _jsonl(import_dir / "calls.jsonl", [_record("ok"), _record("bad", given)])
    with pytest.raises(ImportFailed) as refused:
        dataset_import(path=source, fmt="jsonl")
    [error] = refused.value.summary.errors
    assert (error["file"], error["line"], error["field"]) == ("calls.jsonl", 2, "audio")
    assert message in error["message"]
    assert not Conversation.objects.exists()


def test_turn_starting_after_the_audio_ends_is_refused(tmp_path):
    write_wav(tmp_path / "short.wav", 950)
    source = _jsonl(tmp_path / "calls.jsonl", [_record("call-1", "short.wav")])
    with pytest.raises(ImportFailed) as refused:
        dataset_import(path=source, fmt="jsonl")
    [error] = refused.value.summary.errors
    assert error["field"] == "turns[1].audio_start_ms" and "after the end of the audio (950 ms)" in error["message"]


def test_csv_audio_column(tmp_path, media):
    write_wav(tmp_path / "c1.wav", 4000)
    source = tmp_path / "turns.csv"
    source.write_text(
        "conversation_id,language,position,role,text,audio_start_ms,audio_end_ms,audio\n"
        "c1,fr,0,user,Bonjour,0,800,c1.wav\n"
        "c1,fr,1,agent,Bonjour madame,900,2000,\n"
        "c2,fr,0,user,Salut,,,../c1.wav\n",
        encoding="utf-8",
    )
    with pytest.raises(ImportFailed) as refused:
        dataset_import(path=source, fmt="csv")
    [error] = refused.value.summary.errors
    assert (error["file"], error["line"], error["field"]) == ("turns.csv", 4, "audio")

    dataset_import(path=source, fmt="csv", skip_invalid=True)
    c1 = Conversation.objects.get(external_id="c1")
    assert c1.audio.name == storage_name(hashlib.sha256(wav_bytes(4000)).hexdigest())
    assert not Conversation.objects.filter(external_id="c2").exists()


def test_an_address_is_kept_but_never_fetched(tmp_path):
    source = _jsonl(tmp_path / "calls.jsonl", [_record("call-1", "https://example.com/call-1.wav")])
    dataset_import(path=source, fmt="jsonl")
    conversation = Conversation.objects.get(external_id="call-1")
    assert not conversation.audio and conversation.metadata["audio"] == "https://example.com/call-1.wav"


def test_the_audio_check_alone_refuses_a_record_link_out(tmp_path):
    from reviewapp.corpus.importers.audio import attach_record_audio
    from reviewapp.corpus.importers.records import ParsedConversation, RecordError

    folder = eva_record_with_audio(tmp_path)
    (folder / "audio_mixed.wav").unlink()
    os.symlink(write_wav(tmp_path / "elsewhere.wav", 1000), folder / "audio_mixed.wav")
    with pytest.raises(RecordError) as refused:
        attach_record_audio(ParsedConversation(external_id="x", language="en"), folder, display="1.1.2/audio_mixed.wav")
    assert refused.value.field == "audio_mixed.wav" and "outside the import folder" in refused.value.message
