"""WAV files for audio tests, built here with `wave` so tests never depend on the code they check.

Sample i of a test WAV is `pattern(i)`: a ramp that changes every few frames, so two different
stretches of the file never hold the same bytes and a test can say exactly which frames a
segment must contain.
"""

from __future__ import annotations

import io
import shutil
import wave
from pathlib import Path

RATE = 4000  # Chromium plays nothing below 3 kHz
EVA_RECORD = (
    Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "eva" / "tests" / "artifacts" / "records" / "1.1.2"
)
# The real record's last audio timestamp is 336.3 s after its first one.
EVA_RECORD_MS = 340_000


def pattern(i: int) -> int:
    return (i // 7) % 251


def frames(first: int, last: int) -> bytes:
    return bytes(pattern(i) for i in range(first, last))


def wav_bytes(duration_ms: int, *, rate: int = RATE) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(1)
        out.setframerate(rate)
        out.writeframes(frames(0, duration_ms * rate // 1000))
    return buffer.getvalue()


def write_wav(path: Path, duration_ms: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(wav_bytes(duration_ms))
    return path


def eva_record_with_audio(tmp_path: Path, *, duration_ms: int = EVA_RECORD_MS) -> Path:
    """A copy of EVA's record 1.1.2 with an `audio_mixed.wav` long enough for every turn."""
    folder = tmp_path / "run" / "records" / "1.1.2"
    shutil.copytree(EVA_RECORD, folder)
    for file in folder.iterdir():
        file.chmod(0o644)
    folder.chmod(0o755)
    write_wav(folder / "audio_mixed.wav", duration_ms)
    return folder


def read_frames(data: bytes) -> tuple[int, bytes]:
    """(frame rate, frames) of a WAV given as bytes."""
    with wave.open(io.BytesIO(data), "rb") as reader:
        return reader.getframerate(), reader.readframes(reader.getnframes())
