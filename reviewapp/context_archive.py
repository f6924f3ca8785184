"""Template context for the call archive: whether the viewer may open archived calls (leads and admins)."""

from .access import is_lead


def archive(request) -> dict:
    user = getattr(request, "user", None)
    return {"can_open_calls": bool(user is not None and user.is_authenticated and is_lead(user))}
