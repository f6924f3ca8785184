"""The audio a listening judge is sent: a turn's segment of its conversation's recording, or the recording.

Cut on the server (scoring.audio, standard-library `wave`), sent as a base64 WAV in an `input_audio`
content part. A target with nothing to send is unresolved "no audio" and never called: a listening
judge given no audio would be answering about nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reviewapp.models import Conversation, JudgeCall, Turn
from scoring.audio import AudioClip, AudioError, wav_join, wav_segment
from scoring.errors import TribunalError

NO_AUDIO = "no audio"


class NoAudio(TribunalError, ValueError):
    """Why a target has no audio to send, in words for the verdict's explanation."""

    def __str__(self) -> str:
        return f"{NO_AUDIO}: {self.args[0]}"


def clip_for(*, conversation: Conversation, turn: Turn | None, role: str = "", turns: Sequence[Turn] = ()) -> AudioClip:
    """The turn's segment (start to end ms); for a conversation-level target the whole recording, or with
    `role` that speaker's turns (from `turns`) joined with a pause between them."""
    if not conversation.audio:
        raise NoAudio("the conversation has no audio file")
    if turn is None and role:
        spans = [
            (t.audio_start_ms, t.audio_end_ms)
            for t in turns
            if t.role == role and t.audio_start_ms is not None and t.audio_end_ms is not None
        ]
        if not spans:
            raise NoAudio(f"no {role} turn of the conversation has an audio start and end")
        return _joined(conversation, spans)
    start_ms = end_ms = None
    if turn is not None:
        if turn.audio_start_ms is None or turn.audio_end_ms is None:
            raise NoAudio(f"turn {turn.position} has no audio start and end")
        start_ms, end_ms = turn.audio_start_ms, turn.audio_end_ms
    try:
        with conversation.audio.open("rb") as handle:
            return wav_segment(handle, start_ms=start_ms, end_ms=end_ms)
    except FileNotFoundError:
        raise NoAudio(f"the audio file {conversation.audio.name} is missing from media storage") from None
    except AudioError as exc:
        raise NoAudio(str(exc)) from exc


def _joined(conversation: Conversation, spans: list[tuple[int, int]]) -> AudioClip:
    try:
        with conversation.audio.open("rb") as handle:
            return wav_join(handle, spans)
    except FileNotFoundError:
        raise NoAudio(f"the audio file {conversation.audio.name} is missing from media storage") from None
    except AudioError as exc:
        raise NoAudio(str(exc)) from exc


def archived_audio(clip: AudioClip, *, conversation_id: int, turn_id: int | None) -> dict[str, Any]:
    """What JudgeCall.audio keeps: the hash and length of what was sent and where it was cut from."""
    return {**clip.describe(), "conversation_id": conversation_id, "turn_id": turn_id}


def clip_for_call(call: JudgeCall) -> AudioClip | None:
    """The same audio again, for a replay; NoAudio when the recording changed or went away since."""
    if not call.audio:
        return None
    conversation = Conversation.objects.filter(pk=call.audio.get("conversation_id")).first()
    if conversation is None:
        raise NoAudio("the conversation the audio was cut from no longer exists")
    if not conversation.audio:
        raise NoAudio("the conversation has no audio file any more")
    if call.audio.get("spans"):
        clip = _joined(conversation, [(int(a), int(b)) for a, b in call.audio["spans"]])
        if clip.sha256 != call.audio.get("sha256"):
            raise NoAudio("the recording changed since the call: the audio is not the one that was sent")
        return clip
    try:
        with conversation.audio.open("rb") as handle:
            clip = wav_segment(handle, start_ms=call.audio.get("start_ms"), end_ms=call.audio.get("end_ms"))
    except FileNotFoundError:
        raise NoAudio(f"the audio file {conversation.audio.name} is missing from media storage") from None
    except AudioError as exc:
        raise NoAudio(str(exc)) from exc
    if clip.sha256 != call.audio.get("sha256"):
        raise NoAudio("the recording changed since the call: the segment is not the one that was sent")
    return clip
