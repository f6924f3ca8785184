"""The queue table's rows, written by the `queue_rows` tag, are byte for byte what the page's former
template loop gave for the same items: every branch of a row (a turn or the whole conversation, a
checkbox for leads, reviewed by the reader, held under a lease, sent back with or without takers) and
markup or bidi controls in every text shown."""

import pytest
from django.contrib.auth import get_user_model
from django.template import Context, Template

from reviewapp.models import Conversation, Dataset, Judge, ReviewItem, Turn
from reviewapp.triage.selectors.progress import Takers
from reviewapp.triage.selectors.queue import ReasonCount

# The loop as templates/queue/index.html had it (inside <tbody>).
LOOP = """{% for item in items %}
      <tr>
        {% if can_bulk %}<td><input type="checkbox" name="items" value="{{ item.pk }}" id="bulk-item-{{ item.pk }}" aria-label="Choose item {{ item.pk }}"></td>{% endif %}
        <td class="num">{{ item.priority }}</td>
        <td>
          <a class="strong" href="{% url 'review_item' item.pk %}">#{{ item.pk }}</a>
          <span class="muted small mono">{{ item.conversation.external_id }}{% if item.turn %} · turn {{ item.turn.position }}{% else %} · whole conversation{% endif %}</span>
          {% if item.turn %}<div class="small clamp queue-table__text" lang="{{ item.language }}">{{ item.turn.text|truncatechars:120|bidi }}</div>{% endif %}
        </td>
        <td><span class="judge-name">{{ item.judge.slug }}</span></td>
        <td><span class="modes">{% for reason in item.reasons %}<span class="mode">{{ reason }}</span>{% endfor %}</span></td>
        <td><span class="lang">{{ item.language }}</span></td>
        <td class="small">{{ item.dataset.name }}</td>
        <td class="num">{{ item.review_count }}/{{ item.reviews_required }}{% if item.reviewed_by_me %} <span class="pill pill--muted" title="You reviewed it">you</span>{% endif %}</td>
        <td><span class="pill pill--status-{{ item.status }}">{{ item.get_status_display }}</span>{% if item.lease_active %} <span class="muted small">claimed by {{ item.claimed_by.get_username }}</span>{% endif %}{% if item.takers %} <span class="small takers">sent back: {% if item.takers.current %}{{ item.takers.current|join:", " }} can take it{% else %}<span class="pill pill--warn">nobody can take it</span>{% endif %}</span>{% endif %}</td>
      </tr>
      {% endfor %}"""


def items() -> list[ReviewItem]:
    judge = Judge(pk=3, slug="tts_<fidelity>")
    dataset = Dataset(pk=4, name='voice "agents" & co')
    holder = get_user_model()(pk=9, username="<b>rev</b>")
    long_text = "Bonjour \u202egnirts\u202c <script>alert(1)</script> " + "é" * 150
    shaped = []
    for n, (turn_text, reviewed, lease, takers) in enumerate(
        [
            (long_text, False, False, None),
            ("court & <i>net</i>", True, True, Takers(original=["ana"], anyone=["<bo>", "li"], revising=[])),
            (None, False, True, Takers(original=[], anyone=[], revising=[])),
            ("\u2066isolé\u2069", True, False, Takers(original=["ana"], anyone=[], revising=["ana & co"])),
            ("plain ascii <text> " * 10, False, False, None),  # cut at a fixed index
            ("combining q\u0301 and e\u0301 " * 8, False, False, None),  # cut counting characters
            ("x" * 120, False, False, None),  # just short enough
        ]
    ):
        conversation = Conversation(pk=20 + n, external_id=f"call-<{n}>&", language="fr-CA")
        item = ReviewItem(
            pk=1000 + n * 1234,
            priority=(-5, 0, 120, 1234567, 7, 8, 9)[n],
            language=("fr", "fr-CA", "de", "hi", "en", "fr", "ja")[n],
            reasons=[["unresolved"], ["gold_disagrees", "qa_sample"], [], ["<x>"], [], [], []][n],
            status=("open", "in_review", "awaiting_adjudication", "closed", "open", "open", "open")[n],
            reviews_required=(1, 2, 2, 3, 1, 1, 1)[n],
        )
        item.judge, item.dataset, item.conversation = judge, dataset, conversation
        item.turn = Turn(pk=70 + n, position=n * 2 + 1, text=turn_text) if turn_text is not None else None
        item.claimed_by = holder if lease else None
        item.review_count, item.reviewed_by_me, item.lease_active, item.takers = n, reviewed, lease, takers
        shaped.append(item)
    return shaped


@pytest.mark.parametrize("can_bulk", [False, True])
def test_the_rows_are_the_former_loops_markup(can_bulk):
    shown = items()
    context = Context({"items": shown, "can_bulk": can_bulk})
    expected = Template(LOOP).render(context)
    written = Template("{% load queue_rows %}{% queue_rows items can_bulk %}").render(context)

    assert written == expected
    assert "&lt;script&gt;" in written and "<script>" not in written
    assert "\u202e" not in written and "⟨U+202E⟩" in written
    assert written.count("<tr>") == 7 and ("bulk-item-1000" in written) is can_bulk
    assert "plain ascii &lt;text&gt; plain" in written and "q\u0301 and" in written


def test_no_items_no_rows():
    assert Template("{% load queue_rows %}{% queue_rows items True %}").render(Context({"items": []})) == ""


def test_grouped_numbers_are_the_former_loops_when_the_settings_group_them(settings):
    settings.USE_THOUSAND_SEPARATOR = True
    shown = items()
    context = Context({"items": shown, "can_bulk": True})
    written = Template("{% load queue_rows %}{% queue_rows items can_bulk %}").render(context)

    assert written == Template(LOOP).render(context)
    assert '<td class="num">1,234,567</td>' in written and "#1,000</a>" in written


# The reason counts as templates/queue/index.html had them (inside <ul class="reason-counts">).
REASON_LOOP = """{% for reason in queue.reasons %}
    <li><a class="reason-count{% if reason.code == filters.reason %} is-current{% endif %}{% if not reason.count %} is-zero{% endif %}" href="?{{ reason_query }}{{ reason.code }}" hx-get="{{ queue_url }}?{{ reason_query }}{{ reason.code }}" hx-target="#queue-results" hx-swap="outerHTML" hx-push-url="true"><span class="reason-count__label">{{ reason.label }}</span> <span class="reason-count__n">{{ reason.count }}</span></a></li>
    {% endfor %}"""


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("current", ["", "gold_disagrees", "<x>"])
@pytest.mark.parametrize("reason_query", ["reason=", 'language=fr&judge=a"b&reason='])
def test_the_reason_counts_are_the_former_loops_markup(settings, grouped, current, reason_query):
    settings.USE_THOUSAND_SEPARATOR = grouped
    reasons = [
        ReasonCount("gold_disagrees", "Gold disagrees", 1234567),
        ReasonCount("unresolved", "Judges <unresolved> & 'split'", 0),
        ReasonCount("<x>", '"odd"', 3),
    ]
    context = Context(
        {
            "queue": {"reasons": reasons},
            "filters": {"reason": current},
            "reason_query": reason_query,
            "queue_url": "/queue/?<q>",
        }
    )
    written = Template(
        "{% load queue_rows %}{% reason_counts queue.reasons filters.reason reason_query queue_url %}"
    ).render(context)

    assert written == Template(REASON_LOOP).render(context)
    assert written.count("<li>") == 3 and "<unresolved>" not in written and "<x>" not in written
    assert written.count("is-current") == (current != "") and written.count("is-zero") == 1
