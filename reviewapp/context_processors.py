from django.conf import settings

from reviewapp import access
from reviewapp.remembered_urls import remembered_reverse

# (label, url name, url names that mark it current, who sees it)
_NAV = (
    ("Queue", "queue_index", {"queue_index", "review_item", "queue_progress"}, "everyone"),
    ("Datasets", "dataset_list", {"dataset_list", "dataset_detail", "conversation_detail"}, "everyone"),
    ("Sweeps", "sweep_list", {"sweep_list", "sweep_new", "sweep_detail"}, "everyone"),
    (
        "Signatures",
        "signature_list",
        {"signature_list", "signature_create", "signature_detail", "signature_edit", "signature_active"},
        "lead",
    ),
    ("Disputes", "dispute_list", {"dispute_list", "dispute_detail"}, "lead"),
    ("Quality", "quality_index", {"quality_index", "quality_judge", "compare_versions", "reviewer_list"}, "lead"),
    ("My stats", "reviewer_detail", {"reviewer_detail"}, "reviewer"),
    ("Comments", "comment_list", {"comment_list"}, "everyone"),
    ("Exports", "snapshot_list", {"snapshot_list", "snapshot_detail", "snapshot_new"}, "lead"),
    ("People", "people_list", {"people_list"}, "admin"),
)


def nav_items(request) -> list[dict]:
    user = request.user
    if not user.is_authenticated:
        return []
    lead, admin = access.is_lead(user), access.is_admin(user)
    current = request.resolver_match.url_name if request.resolver_match else None
    items = []
    for label, name, names, audience in _NAV:
        if (audience == "lead" and not lead) or (audience == "admin" and not admin):
            continue
        if audience == "reviewer" and lead:
            continue
        url = remembered_reverse(name, [user.pk] if name == "reviewer_detail" else ())
        items.append({"label": label, "url": url, "current": current in names})
    if user.is_staff:
        items.append({"label": "Admin", "url": remembered_reverse("admin:index"), "current": False})
    return items


def viewer(user) -> dict:
    """What templates may know about the person looking: answers from the access layer, never rules."""
    if not user.is_authenticated:
        return {"is_lead": False, "is_admin": False, "sees_all_languages": False, "role": "", "languages": []}
    return {
        "is_lead": access.is_lead(user),
        "is_admin": access.is_admin(user),
        "sees_all_languages": access.sees_all_languages(user),
        "role": access.role_display(user),
        "languages": access.assigned_languages(user),
    }


def tribunal(request):
    return {
        "llm_tier_enabled": settings.LLM_TIER_ENABLED,
        "nav_items": nav_items(request),
        "viewer": viewer(request.user),
    }
