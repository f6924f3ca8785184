"""Conversation audio with HTTP range requests, so the review screen's player can seek to a turn."""

import mimetypes
import re

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_GET

from reviewapp import access
from reviewapp.models import Conversation
from scoring.errors import TribunalError

RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
CHUNK = 64 * 1024


def _ranged(handle, start: int, end: int):
    handle.seek(start)
    left = end - start + 1
    try:
        while left > 0:
            data = handle.read(min(CHUNK, left))
            if not data:
                break
            left -= len(data)
            yield data
    finally:
        handle.close()


class Unsatisfiable(TribunalError, ValueError):
    """A Range header that asks for bytes past the end of the file (answered 416)."""


def byte_range(header: str, size: int) -> tuple[int, int] | None:
    """The inclusive (start, end) a Range header asks for, None for the whole file (no or unreadable range),
    Unsatisfiable when it starts past the end. "bytes=-N" is the last N bytes."""
    match = RANGE.match(header.strip())
    if not match or (not match.group(1) and not match.group(2)):
        return None
    first, last = match.groups()
    if first:
        start, end = int(first), min(int(last), size - 1) if last else size - 1
    else:
        start, end = max(0, size - int(last)), size - 1
    if start >= size or start > end:
        raise Unsatisfiable(f"bytes */{size}")
    return start, end


def _open_audio(conversation: Conversation):
    if not conversation.audio:
        raise Http404("This conversation has no audio.")
    try:
        return conversation.audio.open("rb"), conversation.audio.size
    except FileNotFoundError:
        raise Http404("The audio file is missing.") from None


@require_GET
@login_required
def conversation_audio(request, conversation_id: int):
    conversation = Conversation.objects.filter(pk=conversation_id).first()
    if conversation is None:
        raise Http404("No such conversation.")
    access.conversation_for_user(request.user, conversation)
    handle, size = _open_audio(conversation)
    content_type = mimetypes.guess_type(conversation.audio.name)[0] or "application/octet-stream"
    try:
        wanted = byte_range(request.headers.get("Range", ""), size)
    except Unsatisfiable as exc:
        handle.close()
        response = HttpResponse(status=416)
        response["Content-Range"] = str(exc)
        response["Accept-Ranges"] = "bytes"
        return response
    if wanted is None:
        response = FileResponse(handle, content_type=content_type)
        response["Content-Length"] = str(size)
    else:
        start, end = wanted
        response = StreamingHttpResponse(_ranged(handle, start, end), status=206, content_type=content_type)
        response["Content-Range"] = f"bytes {start}-{end}/{size}"
        response["Content-Length"] = str(end - start + 1)
    response["Accept-Ranges"] = "bytes"
    patch_cache_control(response, private=True, max_age=3600)
    return response
