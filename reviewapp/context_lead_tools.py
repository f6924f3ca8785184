"""Template context for the lead-only tools a page links to: the call archive and imports from the browser."""

from reviewapp.access import is_lead


def lead_tools(request) -> dict:
    user = getattr(request, "user", None)
    lead = bool(user is not None and user.is_authenticated and is_lead(user))
    return {"can_open_calls": lead, "can_import": lead}
