"""Imports started from the browser: an upload or a path on the server, run on a worker by the same
import service as `manage.py import_data`, with its progress and its line-numbered errors kept on an
ImportJob for the page to poll.

Limits: a server path must lie under settings.TRIBUNAL_IMPORT_ROOT (no `..`, no link out of it), and
an upload, or the file or folder a path names, may hold at most settings.TRIBUNAL_IMPORT_MAX_BYTES.
An EVA run folder is uploaded as a .zip: every member is checked (no absolute path, no `..`, no
link, no more than the size limit once unpacked) before anything is unpacked.
"""

from __future__ import annotations

import re
import shutil
import stat
import uuid
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from reviewapp.corpus.importers import FORMATS
from reviewapp.corpus.services.import_progress import OutsideProgress
from reviewapp.corpus.services.imports import ImportFailed, dataset_import
from reviewapp.models import Dataset, ImportJob
from scoring.errors import TribunalError

UPLOAD_SUFFIXES = (".jsonl", ".json", ".csv", ".zip")
SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class ImportJobError(TribunalError, ValueError):
    """An import that cannot be started as asked; nothing was queued."""


def _human(size: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return f"{size} bytes"


def _limit() -> int:
    return int(settings.TRIBUNAL_IMPORT_MAX_BYTES)


def _too_large(size: int, what: str) -> ImportJobError:
    return ImportJobError(f"{what} holds {_human(size)}, more than the {_human(_limit())} an import may hold.")


def server_path_check(value: str) -> Path:
    """The file or folder `value` names under the import root, or ImportJobError saying why not."""
    root = Path(settings.TRIBUNAL_IMPORT_ROOT).resolve()
    value = value.strip()
    if not value:
        raise ImportJobError("Give a path under the import folder.")
    relative = PurePosixPath(value.replace("\\", "/"))
    candidate = Path(value) if relative.is_absolute() else root.joinpath(*relative.parts)
    if ".." in relative.parts:
        raise ImportJobError(f"{value!r} leaves the import folder ('..' is refused).")
    resolved = candidate.resolve()
    if not resolved.is_relative_to(root):
        raise ImportJobError(f"{value!r} is outside the import folder {root} (or a link leads out of it).")
    if not resolved.exists():
        raise ImportJobError(f"Nothing at {value!r} under {root}.")
    size = (
        sum(p.stat().st_size for p in resolved.rglob("*") if p.is_file())
        if resolved.is_dir()
        else resolved.stat().st_size
    )
    if size > _limit():
        raise _too_large(size, repr(value))
    return resolved


def _unpack(archive: Path, into: Path) -> Path:
    """Unpack a checked .zip; returns the folder to import (its single top folder, if it has one)."""
    try:
        with zipfile.ZipFile(archive) as bundle:
            members = bundle.infolist()
            total = 0
            for member in members:
                name = PurePosixPath(member.filename)
                if name.is_absolute() or ".." in name.parts or re.match(r"^[A-Za-z]:", member.filename):
                    raise ImportJobError(f"{archive.name}: member {member.filename!r} would land outside the upload.")
                if stat.S_ISLNK(member.external_attr >> 16):
                    raise ImportJobError(f"{archive.name}: member {member.filename!r} is a link; links are refused.")
                total += member.file_size
            if total > _limit():
                raise _too_large(total, f"{archive.name} unpacked")
            bundle.extractall(into)
    except zipfile.BadZipFile as exc:
        raise ImportJobError(f"{archive.name} is not a readable .zip file ({exc}).") from exc
    archive.unlink()
    entries = [p for p in into.iterdir() if not p.name.startswith(".") and p.name != "__MACOSX"]
    top = entries[0] if len(entries) == 1 and entries[0].is_dir() else into
    # A JSONL or CSV file zipped with its audio: import the file (its audio paths are relative to it).
    files = [p for p in top.iterdir() if p.is_file() and p.suffix.lower() in (".jsonl", ".csv")]
    return files[0] if len(files) == 1 else top


def _store_upload(upload) -> tuple[str, Path]:
    name = SAFE_NAME.sub("_", Path(upload.name or "upload").name).strip("._") or "upload"
    if not name.lower().endswith(UPLOAD_SUFFIXES):
        raise ImportJobError(
            f"{upload.name!r}: upload a {', '.join(UPLOAD_SUFFIXES)} file (an EVA run folder as a .zip)."
        )
    if upload.size > _limit():
        raise _too_large(upload.size, repr(upload.name))
    folder = Path(settings.TRIBUNAL_UPLOAD_DIR) / uuid.uuid4().hex
    folder.mkdir(parents=True)
    target = folder / name
    try:
        with target.open("wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
        if name.lower().endswith(".zip"):
            return upload.name, _unpack(target, folder)
    except ImportJobError:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return upload.name, target


def import_job_start(
    *,
    user,
    upload=None,
    server_path: str = "",
    fmt: str = "auto",
    dataset_name: str = "",
    language: str = "",
    skip_invalid: bool = False,
    dispatch: Callable[[int], None] | None = None,
) -> ImportJob:
    """Check the input, keep it where a worker can read it and queue its import; ImportJobError if refused.

    `dispatch(job_id)` queues the import once committed, handed in by the caller (tasks.import_jobs.import_job_queue)."""
    if fmt not in FORMATS:
        raise ImportJobError(f"Unknown format {fmt!r}: expected one of {', '.join(FORMATS)}.")
    if bool(upload) == bool(server_path.strip()):
        raise ImportJobError("Upload a file or give a server path, not both and not neither.")
    if upload:
        source, path = _store_upload(upload)
        kind = ImportJob.Source.UPLOAD
    else:
        path = server_path_check(server_path)
        source, kind = server_path.strip(), ImportJob.Source.PATH
    with transaction.atomic():
        job = ImportJob.objects.create(
            source_kind=kind,
            source=source[:500],
            path=str(path)[:1000],
            fmt=fmt,
            dataset_name=dataset_name.strip()[:200],
            language=language.strip()[:35],
            skip_invalid=skip_invalid,
            stage="waiting for a worker",
            created_by=user if user is not None and user.is_authenticated else None,
        )
        if dispatch:
            job_id = job.pk
            transaction.on_commit(lambda: dispatch(job_id))
    return job


def _set(job_id: int, **fields) -> None:
    ImportJob.objects.filter(pk=job_id).update(**fields)


def import_job_run(*, job_id: int) -> ImportJob:
    """Run the import of a waiting job (a finished one is returned as it is: safe to run twice)."""
    job = ImportJob.objects.get(pk=job_id)
    if job.finished:
        return job
    _set(job.pk, status=ImportJob.Status.RUNNING, started_at=timezone.now(), progress=5, stage="started")

    # Written outside the import's one transaction, so the job's page sees it move (import_progress).
    progress = OutsideProgress(job.pk)
    try:
        summary = dataset_import(
            path=job.path,
            fmt=job.fmt,
            dataset_name=job.dataset_name or None,
            language=job.language or None,
            skip_invalid=job.skip_invalid,
            progress=progress,
        )
    except ImportFailed as failure:
        _set(
            job.pk,
            status=ImportJob.Status.FAILED,
            stage="refused: nothing was written",
            progress=100,
            summary=failure.summary.as_dict(),
            errors=failure.summary.errors,
            finished_at=timezone.now(),
        )
    else:
        _set(
            job.pk,
            status=ImportJob.Status.DONE,
            stage="done",
            progress=100,
            summary=summary.as_dict(),
            errors=summary.errors,
            dataset=Dataset.objects.filter(name=summary.dataset).first(),
            finished_at=timezone.now(),
        )
    finally:
        progress.close()
    job.refresh_from_db()
    return job
