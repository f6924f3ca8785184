"""Synthetic audio for the demo conversations, so the review screen's segment player has something to play.

Each conversation gets a small mono WAV (4 kHz, 8-bit: about 4 KB a second) with a low tone while the
caller speaks, a higher one while the agent speaks, and silence between turns, at the turn timings
seed_demo sets. Files are named after the conversation and written only when missing or stale.
"""

from __future__ import annotations

import functools
import io
import math
import wave

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from reviewapp.models import Conversation, Dataset

SAMPLE_RATE = 4000  # Chromium plays nothing below 3 kHz
TONES = {"user": 220.0, "agent": 330.0}
TAIL_MS = 500
WAV_HEADER_BYTES = 44


def _frames(segments: list[tuple[int, int, str]]) -> int:
    return (max((end for _, end, _ in segments), default=0) + TAIL_MS) * SAMPLE_RATE // 1000


@functools.cache
def _wave(frequency: float, length: int) -> bytes:
    return bytes(128 + int(70 * math.sin(2 * math.pi * frequency * i / SAMPLE_RATE)) for i in range(length))


def _tone(frequency: float, length: int) -> bytearray:
    """`length` samples of a sine, faded in and out over 20 ms so segments start and stop without clicks."""
    # Built from one cached long wave (sliced), so a demo of dozens of conversations takes milliseconds.
    size = 1 << max(12, (length - 1).bit_length())
    tone = bytearray(_wave(frequency, size)[:length])
    fade = min(SAMPLE_RATE // 50, length // 2)
    for i in range(fade):
        for index in (i, length - 1 - i):
            tone[index] = 128 + round((tone[index] - 128) * i / fade)
    return tone


def conversation_wav(segments: list[tuple[int, int, str]]) -> bytes:
    """A WAV with a tone per (start_ms, end_ms, role) segment and silence elsewhere."""
    samples = bytearray([128]) * _frames(segments)
    for start, end, role in segments:
        first, last = start * SAMPLE_RATE // 1000, min(len(samples), end * SAMPLE_RATE // 1000)
        if last > first:
            samples[first:last] = _tone(TONES.get(role, 440.0), last - first)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(1)
        out.setframerate(SAMPLE_RATE)
        out.writeframes(bytes(samples))
    return buffer.getvalue()


def demo_audio_write(*, dataset: Dataset) -> int:
    """Give every conversation of `dataset` with timed turns an audio file; returns how many were written."""
    written = 0
    conversations = dataset.conversations.prefetch_related("turns").order_by("pk")
    for conversation in conversations:
        segments = [
            (t.audio_start_ms, t.audio_end_ms, t.role)
            for t in conversation.turns.all()
            if t.audio_start_ms is not None and t.audio_end_ms is not None
        ]
        if not segments:
            continue
        name = f"audio/demo/{conversation.external_id}.wav"
        expected_size = WAV_HEADER_BYTES + _frames(segments)
        if (
            conversation.audio.name == name
            and default_storage.exists(name)
            and default_storage.size(name) == expected_size
        ):
            continue
        data = conversation_wav(segments)
        if default_storage.exists(name):
            default_storage.delete(name)
        saved = default_storage.save(name, ContentFile(data))
        Conversation.objects.filter(pk=conversation.pk).update(audio=saved)
        written += 1
    return written
