"""`{% verdict_shape verdict as shape %}`: a verdict in its judge's own shape (selectors.verdict_shapes)."""

from django import template

from reviewapp.review.selectors.verdict_shapes import verdict_shape as shape_of

register = template.Library()


@register.simple_tag
def verdict_shape(verdict):
    """Reads the verdict's judge version (loaded with it by the page's selector): no query of its own."""
    return shape_of(verdict.judge_version.spec, verdict.sub_scores, verdict.flags)


@register.filter
def grain_value(grain: dict, name: str):
    """A reviewer's grain label for one part: a sub-metric score, or whether a criterion was met."""
    if not isinstance(grain, dict):
        return None
    for group in ("sub_scores", "criteria"):
        values = grain.get(group) or {}
        if name in values:
            return values[name]
    return None
