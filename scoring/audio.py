"""Audio for judges: read a WAV's shape, cut a turn's segment out of it, describe the bytes sent.

Plain Python on the standard library's `wave` module (PCM WAV only): no Django, no decoder. A
segment is cut on frame boundaries and written as a complete WAV of its own (same channels,
sample width and rate), so an audio-capable chat model gets a file it can play, and a test can
rebuild the same bytes independently from the source file.
"""

from __future__ import annotations

import base64
import hashlib
import io
import wave
from dataclasses import dataclass
from typing import BinaryIO

from scoring.errors import TribunalError

# EVA's judges that listen to the audio rather than read a transcript (judge.yaml keys).
EVA_AUDIO_JUDGES = frozenset({"agent_speech_fidelity", "tts_fidelity", "user_speech_fidelity"})
# Whose speech EVA's conversation-level audio judges hear: EVA sends one speaker's own recording; from
# a mixed recording that is that speaker's turns, joined with a pause between them.
EVA_AUDIO_ROLES = {"agent_speech_fidelity": "agent", "user_speech_fidelity": "user"}
AUDIO_FORMAT = "wav"
JOIN_PAUSE_MS = 1000


class AudioError(TribunalError, ValueError):
    """Audio that cannot be read or cut as asked."""


@dataclass(frozen=True)
class WavInfo:
    channels: int
    sample_width: int
    frame_rate: int
    frames: int

    @property
    def duration_ms(self) -> int:
        return round(self.frames * 1000 / self.frame_rate) if self.frame_rate else 0


@dataclass(frozen=True)
class AudioClip:
    """The bytes a judge is sent, and what the archive keeps of them (hash and length, never the bytes)."""

    data: bytes
    start_ms: int | None
    end_ms: int | None
    duration_ms: int
    format: str = AUDIO_FORMAT
    spans: tuple[tuple[int, int], ...] = ()  # when several stretches were joined: each (start_ms, end_ms)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    def describe(self) -> dict[str, object]:
        return {
            "sha256": self.sha256,
            "bytes": len(self.data),
            "duration_ms": self.duration_ms,
            "start_ms": self.start_ms,
            "end_ms": self.end_ms,
            "format": self.format,
            **({"spans": [list(span) for span in self.spans]} if self.spans else {}),
        }


def wav_info(handle: BinaryIO) -> WavInfo:
    """The shape of a PCM WAV; AudioError when it is not one `wave` can read."""
    try:
        with wave.open(handle, "rb") as reader:
            return WavInfo(reader.getnchannels(), reader.getsampwidth(), reader.getframerate(), reader.getnframes())
    except (wave.Error, EOFError) as exc:
        raise AudioError(f"not a PCM WAV file the server can read ({exc})") from exc


def wav_segment(handle: BinaryIO, *, start_ms: int | None, end_ms: int | None) -> AudioClip:
    """The WAV between start_ms and end_ms (None: from the start / to the end), as a WAV of its own.

    A segment that starts at or after the end of the audio, or ends before it starts, is an
    AudioError: sending silence, or the wrong stretch, to a judge would be a guess.
    """
    try:
        with wave.open(handle, "rb") as reader:
            rate = reader.getframerate()
            total = reader.getnframes()
            first = 0 if start_ms is None else start_ms * rate // 1000
            last = total if end_ms is None else min(total, end_ms * rate // 1000)
            if start_ms is not None and start_ms < 0:
                raise AudioError(f"the segment starts before the audio ({start_ms} ms)")
            if first >= total:
                raise AudioError(
                    f"the segment starts at {start_ms} ms, after the end of the audio "
                    f"({total * 1000 // max(rate, 1)} ms)"
                )
            if last <= first:
                raise AudioError(f"the segment ends ({end_ms} ms) before it starts ({start_ms} ms)")
            reader.setpos(first)
            data = _wav_file(reader.readframes(last - first), like=reader)
    except (wave.Error, EOFError) as exc:
        raise AudioError(f"not a PCM WAV file the server can read ({exc})") from exc
    return AudioClip(data=data, start_ms=start_ms, end_ms=end_ms, duration_ms=round((last - first) * 1000 / rate))


def wav_join(handle: BinaryIO, spans: list[tuple[int, int]], *, pause_ms: int = JOIN_PAUSE_MS) -> AudioClip:
    """The stretches `spans` of one WAV, in order, with `pause_ms` of silence between them, as one WAV."""
    if not spans:
        raise AudioError("no stretch of audio to join")
    try:
        with wave.open(handle, "rb") as reader:
            rate, width, channels, total = (
                reader.getframerate(),
                reader.getsampwidth(),
                reader.getnchannels(),
                reader.getnframes(),
            )
            silence = (b"\x80" if width == 1 else b"\x00" * width) * channels * (pause_ms * rate // 1000)
            pieces: list[bytes] = []
            for start_ms, end_ms in spans:
                first, last = start_ms * rate // 1000, min(total, end_ms * rate // 1000)
                if start_ms < 0 or first >= total or last <= first:
                    raise AudioError(f"the stretch {start_ms}-{end_ms} ms is not inside the audio")
                reader.setpos(first)
                pieces.append(reader.readframes(last - first))
            joined = silence.join(pieces)
            data = _wav_file(joined, like=reader)
    except (wave.Error, EOFError) as exc:
        raise AudioError(f"not a PCM WAV file the server can read ({exc})") from exc
    frames = len(joined) // (width * channels)
    return AudioClip(
        data=data,
        start_ms=None,
        end_ms=None,
        duration_ms=round(frames * 1000 / rate),
        spans=tuple((int(a), int(b)) for a, b in spans),
    )


def _wav_file(frames: bytes, *, like: wave.Wave_read) -> bytes:
    """`frames` as a complete WAV with the channels, sample width and rate of the file `like` reads."""
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(like.getnchannels())
        writer.setsampwidth(like.getsampwidth())
        writer.setframerate(like.getframerate())
        writer.writeframes(frames)
    return out.getvalue()


def input_audio_part(clip: AudioClip) -> dict[str, object]:
    """The chat-completions content part that carries audio to an audio-capable model."""
    return {"type": "input_audio", "input_audio": {"data": clip.base64, "format": clip.format}}
