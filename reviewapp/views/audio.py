"""Conversation audio with HTTP range requests, so the review screen's player can seek to a turn."""

import mimetypes
import re

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_GET

from .. import access
from ..models import Conversation

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


@require_GET
@login_required
def conversation_audio(request, conversation_id: int):
    conversation = Conversation.objects.filter(pk=conversation_id).first()
    if conversation is None:
        raise Http404("No such conversation.")
    access.conversation_for_user(request.user, conversation)
    if not conversation.audio:
        raise Http404("This conversation has no audio.")
    try:
        handle = conversation.audio.open("rb")
        size = conversation.audio.size
    except FileNotFoundError:
        raise Http404("The audio file is missing.") from None
    content_type = mimetypes.guess_type(conversation.audio.name)[0] or "application/octet-stream"
    match = RANGE.match(request.headers.get("Range", "").strip())
    if not match or (not match.group(1) and not match.group(2)):
        response = FileResponse(handle, content_type=content_type)
        response["Content-Length"] = str(size)
    else:
        first, last = match.groups()
        if first:
            start, end = int(first), min(int(last), size - 1) if last else size - 1
        else:  # "bytes=-N": the last N bytes
            start, end = max(0, size - int(last)), size - 1
        if start >= size or start > end:
            handle.close()
            response = HttpResponse(status=416)
            response["Content-Range"] = f"bytes */{size}"
            response["Accept-Ranges"] = "bytes"
            return response
        response = StreamingHttpResponse(_ranged(handle, start, end), status=206, content_type=content_type)
        response["Content-Range"] = f"bytes {start}-{end}/{size}"
        response["Content-Length"] = str(end - start + 1)
    response["Accept-Ranges"] = "bytes"
    patch_cache_control(response, private=True, max_age=3600)
    return response
