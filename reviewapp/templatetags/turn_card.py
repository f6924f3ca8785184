"""A turn's card (`conversations/detail.html#turn`, on the conversation page, its turn fragment and the
review screen's context turns), written by two tags around the template's judgements block: a review
screen shows five to nine turns, and the partial's two dozen variable lookups, filters and conditions per
turn cost the engine more than the rest of its turns' data. The markup is the partial's as it was
(tests/reviewapp/corpus/test_turn_card.py renders both and compares them); every value is escaped as the
engine escapes, transcript text goes through `bidi` as everywhere else. The gold labels and verdicts
stay template partials (`goldlist`, `verdictlist`), rendered between the two tags.
"""

from __future__ import annotations

from django import template
from django.conf import settings
from django.urls import reverse
from django.utils import formats
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

from reviewapp.templatetags.queue_rows import escape, shown_text

register = template.Library()

_TOOL_ROLES = ("tool_call", "tool_response")
_SPEECH_ROLES = ("user", "agent")
_DIFF_NOTE = '<span class="pill pill--warn">said ≠ intended</span>'
_BLIND_NOTE = (
    "<p class=\"muted small blind-note\">Blind review: judges' verdicts, gold and others' labels appear once "
    "you have labelled this turn.</p>"
)


def _number(value, use_l10n) -> str:
    """An integer as the engine prints it: localized only when the settings group digits."""
    if settings.USE_THOUSAND_SEPARATOR:
        return str(formats.localize(value, use_l10n=use_l10n))
    return str(value)


def _value(value, use_l10n) -> str:
    """`{{ value }}`: localized, then text, then escaped unless already safe (the engine's
    render_value_in_context)."""
    return conditional_escape(str(formats.localize(value, use_l10n=use_l10n)))


def _text(value) -> str:
    """`{{ value|bidi }}`."""
    return shown_text("" if value is None else str(value))


def _segment_button(turn, conversation, use_l10n) -> str:
    """`{% include "audio/player.html#segment_button" %}`."""
    if not conversation.audio:
        return "\n\n"
    if turn.audio_start_ms is not None and turn.audio_end_ms is not None:
        start, end = _number(turn.audio_start_ms, use_l10n), _number(turn.audio_end_ms, use_l10n)
        position = _number(turn.position, use_l10n)
        return (
            '\n\n<button type="button" class="button button--quiet button--small" data-play-segment '
            f'data-start-ms="{start}" data-end-ms="{end}" aria-label="Play turn {position}\'s audio '
            f'({start} to {end} ms)">▶ Play</button>\n\n'
        )
    if turn.role in _SPEECH_ROLES:
        return '\n\n<span class="muted small" data-audio-none>no audio timing</span>\n\n'
    return "\n\n"


def _diff_side(segments, tag: str) -> str:
    return "".join(_text(text) if op == "equal" else f"<{tag}>{_text(text)}</{tag}>" for op, text in segments)


def _body(turn, language: str, use_l10n) -> str:
    role = turn.role
    if role in _TOOL_ROLES:
        metadata = turn.metadata
        tool = metadata.get("tool") if isinstance(metadata, dict) else None
        shown_tool = f" <code>{_value(tool, use_l10n)}</code>" if tool else ""
        kind = "Call" if role == "tool_call" else "Response"
        display = turn.display_text
        return (
            '\n    <details class="fold tool">\n'
            f"      <summary>{kind}{shown_tool} "
            f'<span class="muted small">{_number(len(display), use_l10n)} characters</span></summary>\n'
            f'      <pre class="code">{_text(display)}</pre>\n'
            "    </details>\n  "
        )
    diff = turn.diff
    if diff:
        return (
            '\n    <div class="diff">\n'
            '      <div class="diff__side">\n'
            '        <h3 class="diff__label">Intended <span class="muted">(sent to TTS)</span></h3>\n'
            f'        <p class="turn__text" lang="{language}">{_diff_side(diff.intended, "del")}</p>\n'
            "      </div>\n"
            '      <div class="diff__side">\n'
            '        <h3 class="diff__label">Said <span class="muted">(transcribed audio)</span></h3>\n'
            f'        <p class="turn__text" lang="{language}">{_diff_side(diff.said, "ins")}</p>\n'
            "      </div>\n"
            "    </div>\n  "
        )
    return f'\n    <p class="turn__text" lang="{language}">{_text(turn.text)}</p>\n  '


@register.simple_tag(takes_context=True)
def turn_card_head(context, turn, conversation) -> SafeString:
    """The partial from `<article>` to the blind-review note: the heading, the audio controls (on the
    conversation page and its turn fragment), the text, tool call or said/intended diff."""
    use_l10n = context.use_l10n
    pk = _number(turn.pk, use_l10n)
    role = escape(turn.role)
    start = turn.audio_start_ms
    if start is not None:
        end = turn.audio_end_ms
        shown_end = "?" if end is None else _number(end, use_l10n)
        audio = f'<span class="muted small mono" title="Audio position">{_number(start, use_l10n)}\u2013{shown_end} ms</span>'
    else:
        audio = ""
    request = context.get("request")
    match = getattr(request, "resolver_match", None)
    if context.get("turn_players") or (match is not None and match.url_name == "conversation_turn"):
        player = _segment_button(turn, conversation, use_l10n)
    else:
        player = ""
    if turn.gold or turn.judged:
        url = escape(reverse("conversation_turn", args=[conversation.pk, turn.pk]))
        refresh = (
            f'<a class="turn__refresh small" href="{url}" hx-get="{url}" hx-target="#turn-{pk}" '
            'hx-swap="outerHTML" title="Reload this turn\'s labels and verdicts">Refresh</a>'
        )
    else:
        refresh = ""
    language = _value(conversation.language, use_l10n)
    # Why mark_safe is right here: besides its own fixed markup, the head holds only numbers it formats and
    # values escaped above: `escape` (the template engine's escaping), `_value` (conditional_escape, as
    # {{ value }}) and `_text` (bidi, which escapes); the audio and player pieces are built the same way.
    # tests/reviewapp/corpus/test_turn_card.py puts markup in every field and compares with the template.
    return mark_safe(  # noqa: S308  # every value escaped above (escape, _value, _text)
        f'\n<article class="turn turn--{role}" id="turn-{pk}" aria-labelledby="turn-{pk}-title">\n'
        '  <header class="turn__head">\n'
        f'    <h2 class="turn__title" id="turn-{pk}-title"><a href="#turn-{pk}" class="turn__pos" '
        f'title="Link to this turn">#{_number(turn.position, use_l10n)}</a> '
        f'<span class="badge badge--{role}">{escape(turn.get_role_display())}</span></h2>\n'
        f"    {audio}\n"
        f"    {player}\n"
        f"    {_DIFF_NOTE if turn.diff else ''}\n"
        f"    {refresh}\n"
        "  </header>\n"
        f"  {_body(turn, language, use_l10n)}\n"
        f"  {_BLIND_NOTE if turn.blind else ''}\n  "
    )


@register.simple_tag(takes_context=True)
def turn_card_tail(context, turn) -> SafeString:
    """The partial after the judgements: the turn's entities and metadata, folded, and `</article>`."""
    entities, metadata = turn.entities, turn.metadata
    if entities or (metadata and turn.role not in _TOOL_ROLES):
        use_l10n = context.use_l10n
        shown_entities = f"<p><strong>Entities:</strong> {_value(entities, use_l10n)}</p>" if entities else ""
        shown_metadata = f"<p><strong>Metadata:</strong> {_value(metadata, use_l10n)}</p>" if metadata else ""
        folded = (
            '\n    <details class="fold small"><summary>Turn metadata</summary>\n'
            f"      {shown_entities}\n"
            f"      {shown_metadata}\n"
            "    </details>\n  "
        )
    else:
        folded = ""
    # Why mark_safe is right here: the only data in the tail are the entities and metadata, escaped by
    # `_value` (conditional_escape, as {{ value }}); the rest is fixed markup.
    return mark_safe(f"\n  {folded}\n</article>\n")  # noqa: S308  # entities, metadata escaped by _value
