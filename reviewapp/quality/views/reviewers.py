"""Reviewer statistics: leads see everyone; a reviewer may open their own."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from reviewapp import access
from reviewapp.adjudication.views.disputes import check_lead
from reviewapp.quality.selectors import reviewer_stats
from reviewapp.rendering import render_page


@require_GET
@login_required
def reviewer_list(request):
    check_lead(request.user)
    language = request.GET.get("language", "").strip()
    context = {
        "rows": reviewer_stats.reviewer_stats(language=language),
        "language": language,
        "single": None,
    }
    return render_page(request, "reviewers/index.html", "rows", context)


@require_GET
@login_required
def reviewer_detail(request, user_id: int):
    reviewer = get_object_or_404(get_user_model(), pk=user_id)
    if reviewer.pk != request.user.pk and not access.is_lead(request.user):
        raise PermissionDenied("Reviewers see their own statistics only.")
    language = request.GET.get("language", "").strip()
    context = {
        "rows": reviewer_stats.reviewer_stats(reviewer_ids=[reviewer.pk], language=language),
        "language": language,
        "single": reviewer,
    }
    return render_page(request, "reviewers/index.html", "rows", context)
