"""A JSONL export file on PostgreSQL hands its written pages back to the kernel once it is large
(`export_writers.ReleasingFile`): the same bytes as a plain file, no advice below the size it starts
at, then the advice over all of it once and over the last windows after, and a plain file where the
advice is refused or missing."""

from __future__ import annotations

import errno
import os

import pytest

from reviewapp.exports.services import export_writers
from reviewapp.exports.services.export_writers import ReleasingFile, open_released

WINDOW = 1_000
AFTER = 3_500  # the size the advice starts at (RELEASE_AFTER)


@pytest.fixture
def advice(monkeypatch):
    """Every posix_fadvise call as (offset, length, advice), still made for real."""
    calls: list[tuple[int, int, int]] = []
    real = os.posix_fadvise

    def record(fd, offset, length, kind):
        calls.append((offset, length, kind))
        return real(fd, offset, length, kind)

    monkeypatch.setattr(export_writers, "RELEASE_WINDOW", WINDOW)
    monkeypatch.setattr(export_writers, "RELEASE_AFTER", AFTER)
    monkeypatch.setattr(export_writers.os, "posix_fadvise", record)
    return calls


def pieces(total: int, size: int) -> list[bytes]:
    return [bytes([65 + n % 26]) * min(size, total - at) for n, at in enumerate(range(0, total, size))]


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="no posix_fadvise on this platform")
@pytest.mark.parametrize("piece", [1, 299, 1_000, 4_321])
def test_the_file_holds_every_byte_written_and_the_advice_covers_only_the_last_windows(tmp_path, advice, piece):
    data = pieces(12_345, piece)
    path = tmp_path / "export.jsonl"
    with ReleasingFile(path) as handle:
        sizes = []
        for block in data:
            handle.write(block)
            sizes.append(handle.size)

    assert path.read_bytes() == b"".join(data)
    assert advice, "a file of twelve windows was advised"
    first = next(size for size in sizes if size >= AFTER)
    assert advice[0] == (0, first, os.POSIX_FADV_DONTNEED)  # once past AFTER, all of it at once
    released_at = first
    for offset, length, kind in advice[1:]:
        end = offset + length
        assert kind == os.POSIX_FADV_DONTNEED
        assert end in sizes and end - released_at >= WINDOW  # once a window has been written since the last
        assert offset == max(0, end - export_writers.RELEASE_KEPT * WINDOW)  # the last RELEASE_KEPT windows only
        released_at = end
    assert sizes[-1] - released_at < WINDOW  # no window left unadvised but the last, partial one


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="no posix_fadvise on this platform")
def test_a_file_smaller_than_the_size_the_advice_starts_at_is_a_plain_file(tmp_path, advice):
    data = pieces(AFTER - 1, 400)
    path = tmp_path / "export.jsonl"
    with ReleasingFile(path) as handle:
        for block in data:
            handle.write(block)

    assert path.read_bytes() == b"".join(data)
    assert advice == []


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="no posix_fadvise on this platform")
def test_a_file_system_that_refuses_the_advice_gets_a_plain_file(tmp_path, monkeypatch):
    refused: list[int] = []

    def refuse(fd, offset, length, kind):
        refused.append(offset)
        raise OSError(errno.EINVAL, "no advice here")

    monkeypatch.setattr(export_writers, "RELEASE_WINDOW", WINDOW)
    monkeypatch.setattr(export_writers, "RELEASE_AFTER", AFTER)
    monkeypatch.setattr(export_writers.os, "posix_fadvise", refuse)
    data = pieces(10_000, 700)
    path = tmp_path / "export.jsonl"
    with open_released(path, 1 << 10) as handle:  # buffered, as the export opens it
        for block in data:
            handle.write(block)

    assert path.read_bytes() == b"".join(data)
    assert len(refused) == 1  # asked once, then written as a plain file


def test_without_the_advice_on_the_platform_the_file_is_plain(tmp_path, monkeypatch):
    monkeypatch.setattr(export_writers, "RELEASE_WINDOW", WINDOW)
    monkeypatch.setattr(export_writers, "RELEASE_AFTER", AFTER)
    monkeypatch.delattr(export_writers.os, "posix_fadvise", raising=False)
    data = pieces(5_000, 333)
    path = tmp_path / "export.jsonl"
    with ReleasingFile(path) as handle:
        for block in data:
            handle.write(block)
        assert handle.advise is False

    assert path.read_bytes() == b"".join(data)
