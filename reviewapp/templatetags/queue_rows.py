"""The rows of the queue table, written by one tag instead of a template loop: the queue page shows 50
items of a dozen values each, and the template engine's per-variable lookups, filters and `{% url %}`
for each of them cost more than the rest of the page together. The markup is the loop's as it was
(tests/reviewapp/triage/test_queue_rows.py renders both and compares them); every value is escaped
as the engine escapes, transcript text goes through `bidi` as everywhere else.
"""

from __future__ import annotations

import html
import unicodedata

from django import template
from django.conf import settings
from django.urls import reverse
from django.utils import formats
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator, add_truncation_text, calculate_truncate_chars_length
from django.utils.translation import pgettext

from reviewapp.templatetags.text_safety import BIDI_CONTROLS, visible_bidi

TEXT_LENGTH = 120  # `|truncatechars:120`


def escape(value) -> str:
    """The template engine's escaping (django.utils.html.escape is this, marked safe), without its
    per-call wrappers: fifty rows of a dozen values each."""
    return html.escape(str(value), quote=True)


register = template.Library()

_MINE = ' <span class="pill pill--muted" title="You reviewed it">you</span>'
_NOBODY = ' <span class="small takers">sent back: <span class="pill pill--warn">nobody can take it</span></span>'
_SAMPLE_ID = 987654321


def _numbers():
    """How the template engine prints an integer (localized, grouped only when the settings say so), as a
    function, the settings read once per table rather than once per number."""
    return formats.localize if settings.USE_THOUSAND_SEPARATOR else str


def _review_url():
    """`{% url 'review_item' pk %}` as a function of pk, reversed once per table."""
    url = reverse("review_item", args=[_SAMPLE_ID])
    head, sample, tail = url.partition(str(_SAMPLE_ID))
    if not sample or str(_SAMPLE_ID) in tail:
        return lambda pk: reverse("review_item", args=[pk])
    return lambda pk: f"{head}{pk}{tail}"


def _takers(item) -> str:
    takers = getattr(item, "takers", None)
    if not takers:
        return ""
    if takers.current:
        names = ", ".join(escape(name) for name in takers.current)
        return f' <span class="small takers">sent back: {names} can take it</span>'
    return _NOBODY


class _Truncation:
    """`value|truncatechars:120` (Truncator.chars) for the rows of one table: the truncation text is
    translated once (`add_truncation_text` and `calculate_truncate_chars_length` each look it up per
    call: two translation lookups a row), and the text is not walked character by character when its
    first 121 characters hold no combining character: then the cut falls at a fixed index."""

    def __init__(self) -> None:
        self.suffix = pgettext("String to return when truncating text", "%(truncated_text)s…")
        self.length = calculate_truncate_chars_length(TEXT_LENGTH, self.suffix)

    def __call__(self, value) -> str:
        text = unicodedata.normalize("NFC", str(value))
        if len(text) <= TEXT_LENGTH:
            return text
        head = text[: TEXT_LENGTH + 1]
        if head.isascii() or not any(unicodedata.combining(char) for char in head):
            return add_truncation_text(text[: self.length], self.suffix)
        return Truncator(text).chars(TEXT_LENGTH, self.suffix)


def shown_text(text: str) -> str:
    """`text|bidi`: escaped, with bidi controls as visible markers (`visible_bidi`; text without any
    is just escaped, which is what visible_bidi makes of it)."""
    return visible_bidi(text) if BIDI_CONTROLS.search(text) else escape(text)


def _status_name(item, names: dict[str, str]) -> str:
    """The item's status as `get_status_display` gives it, escaped; `names` keeps each one for the rest of
    the table (`get_status_display` translates its label on every call)."""
    name = names.get(item.status)
    if name is None:
        name = names[item.status] = escape(item.get_status_display())
    return name


def queue_row(item, *, can_bulk: bool, url, truncated, statuses: dict[str, str], number) -> str:
    """One item's `<tr>` as HTML text: every value from the data is escaped here (`escape`, the template
    engine's own escaping; transcript text through `visible_bidi`, which escapes)."""
    pk = number(item.pk)
    turn = item.turn
    bulk = (
        f'<td><input type="checkbox" name="items" value="{pk}" id="bulk-item-{pk}" aria-label="Choose item {pk}"></td>'
        if can_bulk
        else ""
    )
    if turn is not None:
        where = f" · turn {number(turn.position)}"
        text = (
            f'<div class="small clamp queue-table__text" lang="{escape(item.language)}">'
            f"{shown_text(truncated(turn.text))}</div>"
        )
    else:
        where, text = " · whole conversation", ""
    reasons = "".join(f'<span class="mode">{escape(reason)}</span>' for reason in item.reasons)
    holder = (
        f' <span class="muted small">claimed by {escape(item.claimed_by.get_username())}</span>'
        if item.lease_active
        else ""
    )
    return (
        f"\n      <tr>\n        {bulk}\n"
        f'        <td class="num">{number(item.priority)}</td>\n'
        "        <td>\n"
        f'          <a class="strong" href="{escape(url(item.pk))}">#{pk}</a>\n'
        f'          <span class="muted small mono">{escape(item.conversation.external_id)}{where}</span>\n'
        f"          {text}\n"
        "        </td>\n"
        f'        <td><span class="judge-name">{escape(item.judge.slug)}</span></td>\n'
        f'        <td><span class="modes">{reasons}</span></td>\n'
        f'        <td><span class="lang">{escape(item.language)}</span></td>\n'
        f'        <td class="small">{escape(item.dataset.name)}</td>\n'
        f'        <td class="num">{number(item.review_count)}/{number(item.reviews_required)}'
        f"{_MINE if item.reviewed_by_me else ''}</td>\n"
        f'        <td><span class="pill pill--status-{escape(item.status)}">{_status_name(item, statuses)}</span>'
        f"{holder}{_takers(item)}</td>\n"
        "      </tr>\n      "
    )


@register.simple_tag
def queue_rows(items, can_bulk) -> SafeString:
    """The `<tr>` of each item on the queue page, with the whitespace the template loop gave them."""
    url, truncated, statuses, number = _review_url(), _Truncation(), {}, _numbers()
    # Why mark_safe is right here: queue_row writes only its own fixed markup, numbers it formats, and
    # values passed through escape() (html.escape, the template engine's own escaping) or shown_text
    # (visible_bidi, which escapes); transcripts, names and reasons are never written unescaped.
    # tests/reviewapp/triage/test_queue_rows.py puts markup in every field and compares with the template.
    rows = "".join(
        queue_row(item, can_bulk=bool(can_bulk), url=url, truncated=truncated, statuses=statuses, number=number)
        for item in items
    )
    return mark_safe(rows)  # noqa: S308  # every value escaped by queue_row


@register.simple_tag
def reason_counts(reasons, current, reason_query, queue_url) -> SafeString:
    """The queue's count per reason, each a link to the queue filtered by it (`reason_query` is the page's
    query with `reason=` at its end; `queue_url` the queue's path for htmx), the one `current` marked and
    the empty ones dimmed: the `<li>` of each with the whitespace the template loop gave them."""
    number, query, url = _numbers(), escape(reason_query), escape(queue_url)
    links = []
    for reason in reasons:
        code = escape(reason.code)
        state = (" is-current" if reason.code == current else "") + ("" if reason.count else " is-zero")
        links.append(
            f'\n    <li><a class="reason-count{state}" href="?{query}{code}" hx-get="{url}?{query}{code}"'
            ' hx-target="#queue-results" hx-swap="outerHTML" hx-push-url="true">'
            f'<span class="reason-count__label">{escape(reason.label)}</span>'
            f' <span class="reason-count__n">{escape(number(reason.count))}</span></a></li>\n    '
        )
    # Why mark_safe is right here: the markup is fixed and every value in it went through escape().
    return mark_safe("".join(links))  # noqa: S308  # every value escaped above
