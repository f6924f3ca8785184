"""The rows of the queue table, written by one tag instead of a template loop: the queue page shows 50
items of a dozen values each, and the template engine's per-variable lookups, filters and `{% url %}`
for each of them cost more than the rest of the page together. The markup is the loop's as it was
(tests/reviewapp/triage/test_queue_rows.py renders both and compares them); every value is escaped
by format_html, transcript text goes through `bidi` as everywhere else.
"""

from __future__ import annotations

from django import template
from django.conf import settings
from django.urls import reverse
from django.utils import formats
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from reviewapp.templatetags.text_safety import visible_bidi

register = template.Library()

_ROW = (
    "\n      <tr>\n        {bulk}\n"
    '        <td class="num">{priority}</td>\n'
    "        <td>\n"
    '          <a class="strong" href="{url}">#{pk}</a>\n'
    '          <span class="muted small mono">{external_id}{where}</span>\n'
    "          {text}\n"
    "        </td>\n"
    '        <td><span class="judge-name">{judge}</span></td>\n'
    '        <td><span class="modes">{reasons}</span></td>\n'
    '        <td><span class="lang">{language}</span></td>\n'
    '        <td class="small">{dataset}</td>\n'
    '        <td class="num">{reviews}/{required}{mine}</td>\n'
    '        <td><span class="pill pill--status-{status}">{status_label}</span>{holder}{takers}</td>\n'
    "      </tr>\n      "
)
_BULK = '<td><input type="checkbox" name="items" value="{}" id="bulk-item-{}" aria-label="Choose item {}"></td>'
_TEXT = '<div class="small clamp queue-table__text" lang="{}">{}</div>'
_MINE = ' <span class="pill pill--muted" title="You reviewed it">you</span>'
_NOBODY = '<span class="pill pill--warn">nobody can take it</span>'
_SAMPLE_ID = 987654321


def _number(value) -> str:
    """An integer as the template engine prints it (localized, grouped only when the settings say so)."""
    return formats.localize(value) if settings.USE_THOUSAND_SEPARATOR else str(value)


def _review_url():
    """`{% url 'review_item' pk %}` as a function of pk, reversed once per table."""
    url = reverse("review_item", args=[_SAMPLE_ID])
    head, sample, tail = url.partition(str(_SAMPLE_ID))
    if not sample or str(_SAMPLE_ID) in tail:
        return lambda pk: reverse("review_item", args=[pk])
    return lambda pk: f"{head}{pk}{tail}"


def _takers(item) -> SafeString | str:
    takers = getattr(item, "takers", None)
    if not takers:
        return ""
    if takers.current:
        names = ", ".join(conditional_escape(name) for name in takers.current)
        return format_html(' <span class="small takers">sent back: {} can take it</span>', mark_safe(names))  # noqa: S308 - each name escaped above
    return format_html(' <span class="small takers">sent back: {}</span>', mark_safe(_NOBODY))  # noqa: S308 - a constant


def queue_row(item, *, can_bulk: bool, url) -> SafeString:
    pk = _number(item.pk)
    turn = item.turn
    return format_html(
        _ROW,
        bulk=format_html(_BULK, pk, pk, pk) if can_bulk else "",
        priority=_number(item.priority),
        url=url(item.pk),
        pk=pk,
        external_id=item.conversation.external_id,
        where=format_html(" · turn {}", _number(turn.position)) if turn else " · whole conversation",
        text=format_html(_TEXT, item.language, visible_bidi(Truncator(turn.text).chars(120))) if turn else "",
        judge=item.judge.slug,
        reasons=SafeString("".join(format_html('<span class="mode">{}</span>', reason) for reason in item.reasons)),
        language=item.language,
        dataset=item.dataset.name,
        reviews=_number(item.review_count),
        required=_number(item.reviews_required),
        mine=mark_safe(_MINE) if item.reviewed_by_me else "",  # noqa: S308 - a constant
        status=item.status,
        status_label=item.get_status_display(),
        holder=format_html(' <span class="muted small">claimed by {}</span>', item.claimed_by.get_username())
        if item.lease_active
        else "",
        takers=_takers(item),
    )


@register.simple_tag
def queue_rows(items, can_bulk) -> SafeString:
    """The `<tr>` of each item on the queue page, with the whitespace the template loop gave them."""
    url = _review_url()
    return SafeString("".join(queue_row(item, can_bulk=bool(can_bulk), url=url) for item in items))
