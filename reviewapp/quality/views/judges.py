"""The judge a quality page is about: leads only, then the judge its address names."""

from __future__ import annotations

from django.shortcuts import get_object_or_404

from reviewapp import access
from reviewapp.models import Judge


def judge_for_lead(request, judge_slug: str) -> Judge:
    """403 for anyone but a lead or admin, then the judge with this slug or a 404."""
    access.check_lead(request.user)
    return get_object_or_404(Judge, slug=judge_slug)
