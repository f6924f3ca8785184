"""Reviewer statistics: leads see everyone; a reviewer may open their own."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from reviewapp import access
from reviewapp.quality.selectors import reviewer_stats
from reviewapp.rendering import render_page


def _stats_page(request, single=None):
    """Everyone's statistics, or `single` reviewer's alone, in the language the address asks for."""
    language = request.GET.get("language", "").strip()
    context = {
        "rows": reviewer_stats.reviewer_stats(reviewer_ids=[single.pk] if single else None, language=language),
        "language": language,
        "single": single,
    }
    return render_page(request, "reviewers/index.html", "rows", context)


@require_GET
@login_required
def reviewer_list(request):
    access.check_lead(request.user)
    return _stats_page(request)


@require_GET
@login_required
def reviewer_detail(request, user_id: int):
    reviewer = get_object_or_404(get_user_model(), pk=user_id)
    if reviewer.pk != request.user.pk and not access.is_lead(request.user):
        raise PermissionDenied("Reviewers see their own statistics only.")
    return _stats_page(request, reviewer)
