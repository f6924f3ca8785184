"""A turn's card, written by the `turn_card_head` and `turn_card_tail` tags around the judgements, is byte
for byte what the `turn` partial of templates/conversations/detail.html gave before for the same turn:
every role, audio timing with and without a recording (the play button on the conversation page and its
turn fragment, none on the review screen), said against intended text, tool calls with and without a
tool name, entities and metadata, blind review, gold labels and verdicts, long text, bidi controls and
markup in every field, with and without `{% localize off %}` (the review screen's)."""

from types import SimpleNamespace

import pytest
from django.template import Context, Template

from reviewapp.corpus.selectors import corpus
from reviewapp.models import Conversation, Dataset, Turn
from tests.factories import import_sweep, label_turn

pytestmark = pytest.mark.django_db

# The partial as templates/conversations/detail.html had it, its two lists included from the page.
FORMER = """
<article class="turn turn--{{ turn.role }}" id="turn-{{ turn.pk }}" aria-labelledby="turn-{{ turn.pk }}-title">
  <header class="turn__head">
    <h2 class="turn__title" id="turn-{{ turn.pk }}-title"><a href="#turn-{{ turn.pk }}" class="turn__pos" title="Link to this turn">#{{ turn.position }}</a> <span class="badge badge--{{ turn.role }}">{{ turn.get_role_display }}</span></h2>
    {% if turn.audio_start_ms is not None %}<span class="muted small mono" title="Audio position">{{ turn.audio_start_ms }}\u2013{{ turn.audio_end_ms|default_if_none:"?" }} ms</span>{% endif %}
    {% if turn_players or request.resolver_match.url_name == "conversation_turn" %}{% include "audio/player.html#segment_button" %}{% endif %}
    {% if turn.diff %}<span class="pill pill--warn">said ≠ intended</span>{% endif %}
    {% if turn.gold or turn.judged %}<a class="turn__refresh small" href="{% url 'conversation_turn' conversation.pk turn.pk %}" hx-get="{% url 'conversation_turn' conversation.pk turn.pk %}" hx-target="#turn-{{ turn.pk }}" hx-swap="outerHTML" title="Reload this turn's labels and verdicts">Refresh</a>{% endif %}
  </header>
  {% if turn.role == "tool_call" or turn.role == "tool_response" %}
    <details class="fold tool">
      <summary>{% if turn.role == "tool_call" %}Call{% else %}Response{% endif %}{% if turn.metadata.tool %} <code>{{ turn.metadata.tool }}</code>{% endif %} <span class="muted small">{{ turn.display_text|length }} characters</span></summary>
      <pre class="code">{{ turn.display_text|bidi }}</pre>
    </details>
  {% elif turn.diff %}
    <div class="diff">
      <div class="diff__side">
        <h3 class="diff__label">Intended <span class="muted">(sent to TTS)</span></h3>
        <p class="turn__text" lang="{{ conversation.language }}">{% for op, text in turn.diff.intended %}{% if op == "equal" %}{{ text|bidi }}{% else %}<del>{{ text|bidi }}</del>{% endif %}{% endfor %}</p>
      </div>
      <div class="diff__side">
        <h3 class="diff__label">Said <span class="muted">(transcribed audio)</span></h3>
        <p class="turn__text" lang="{{ conversation.language }}">{% for op, text in turn.diff.said %}{% if op == "equal" %}{{ text|bidi }}{% else %}<ins>{{ text|bidi }}</ins>{% endif %}{% endfor %}</p>
      </div>
    </div>
  {% else %}
    <p class="turn__text" lang="{{ conversation.language }}">{{ turn.text|bidi }}</p>
  {% endif %}
  {% if turn.blind %}<p class="muted small blind-note">Blind review: judges' verdicts, gold and others' labels appear once you have labelled this turn.</p>{% endif %}
  {% if turn.gold or turn.judged %}
  <div class="judgements">
    {% if turn.gold %}{% with labels=turn.gold %}{% include "conversations/detail.html#goldlist" %}{% endwith %}{% endif %}
    {% if turn.judged %}{% with verdicts=turn.judged %}{% include "conversations/detail.html#verdictlist" %}{% endwith %}{% endif %}
  </div>
  {% endif %}
  {% if turn.entities or turn.metadata and turn.role != "tool_call" and turn.role != "tool_response" %}
    <details class="fold small"><summary>Turn metadata</summary>
      {% if turn.entities %}<p><strong>Entities:</strong> {{ turn.entities }}</p>{% endif %}
      {% if turn.metadata %}<p><strong>Metadata:</strong> {{ turn.metadata }}</p>{% endif %}
    </details>
  {% endif %}
</article>
"""
CURRENT = '{% include "conversations/detail.html#turn" %}'

MARKUP = "<b onclick='x'>&amp;\"</b>"
BIDI = "abc\u202egnirts\u202c \u2066iso\u2069 \u200f"


def turns_of(conversation: Conversation) -> list[Turn]:
    rows = [
        Turn(role="user", text=f"Bonjour {MARKUP} {BIDI}", audio_start_ms=1200, audio_end_ms=3400),
        Turn(role="agent", text="Je répète : zulu kilo trois.", intended_text=f"Je répète : Z K 3 {MARKUP}."),
        Turn(role="agent", text=f"dit {BIDI}", intended_text=f"dit {MARKUP} \u202e", audio_start_ms=5000),
        Turn(role="tool_call", text=f'{{"q": "{MARKUP}", "n": [1, 2]}}', metadata={"tool": f"find_{MARKUP}"}),
        Turn(role="tool_response", text=f"not json {MARKUP} {BIDI}", metadata={"status": "ok"}, entities=[MARKUP]),
        Turn(role="tool_call", text="[1, 2]", metadata=["tool", "list"]),
        Turn(role="tool_response", text="{}", metadata={"tool": 3.5}, audio_start_ms=0, audio_end_ms=0),
        Turn(role="tool_call", text="", metadata={"tool": 0}),
        Turn(role="system", text="q\u0301 " * 3000 + MARKUP, metadata={"k": MARKUP, "n": 1.5}),
        Turn(role="user", text="", entities=[{"text": MARKUP, "type": "name"}], metadata={}),
        Turn(role="agent", text="labelled & judged", intended_text="labelled & judged ", audio_end_ms=9000),
        Turn(role="user", text="  padded <i>x</i>  ", intended_text="  padded <i>x</i>"),
    ]
    for position, turn in enumerate(rows):
        turn.conversation, turn.position = conversation, position * 1000 + 7
    Turn.objects.bulk_create(rows)
    sweep = import_sweep(conversation.dataset)
    shown = list(conversation.turns.order_by("position"))
    label_turn(shown[10], rating=2, verdict_rating=3, sweep=sweep, failure_modes=[MARKUP])
    label_turn(shown[1], rating=1, verdict_rating=None, sweep=sweep)
    return shown


@pytest.fixture(params=["with audio", "without audio"])
def conversation(request):
    dataset = Dataset.objects.create(name=f"calls {MARKUP}", blind_review=False)
    conversation = Conversation.objects.create(
        dataset=dataset,
        external_id="call-1",
        language='fr-CA"><x>',
        audio="audio/call.wav" if request.param == "with audio" else "",
    )
    turns_of(conversation)
    return conversation


PAGES = {
    "conversation page": {"turn_players": True},
    "turn fragment": {"request": SimpleNamespace(resolver_match=SimpleNamespace(url_name="conversation_turn"))},
    "review screen": {"request": SimpleNamespace(resolver_match=SimpleNamespace(url_name="review_item"))},
    "no request": {},
}


@pytest.mark.parametrize("page", list(PAGES))
@pytest.mark.parametrize("localized", [True, False])
def test_the_card_is_the_former_partials_markup(conversation, page, localized):
    shown = corpus.conversation_detail(conversation=conversation).turn_list
    shown[-1].blind, shown[0].blind = True, True
    around = "{% load l10n %}{% localize off %}{}{% endlocalize %}" if not localized else "{}"
    for turn in shown:
        context = Context({"turn": turn, "conversation": conversation, "can_open_calls": True, **PAGES[page]})
        expected = Template(around.replace("{}", FORMER)).render(context)
        written = Template(around.replace("{}", CURRENT)).render(context)
        assert written == expected, turn.position


def test_the_cards_escape_every_field_and_show_each_branch(conversation):
    shown = corpus.conversation_detail(conversation=conversation).turn_list
    shown[-1].blind = True
    page = {"conversation": conversation, "turn_players": True, "can_open_calls": True}
    written = "".join(Template(CURRENT).render(Context({"turn": turn, **page})) for turn in shown)

    assert "<b " not in written and "<x>" not in written and "\u202e" not in written and "\u2066" not in written
    assert written.count("&lt;b onclick=&#x27;x&#x27;&gt;&amp;amp;&quot;&lt;/b&gt;") >= 8
    assert "⟨U+202E⟩" in written and "⟨U+2066⟩" in written and "⟨U+200F⟩" in written
    assert written.count("<article ") == len(shown) == 12
    assert written.count("said ≠ intended") == 2 and written.count("<del>") >= 2 and "<ins>" in written
    assert "<code>find_&lt;b" in written and "<code>3.5</code>" in written and "<code>0</code>" not in written
    assert written.count("Refresh</a>") == 2 and written.count("blind-note") == 1
    assert written.count("Turn metadata") == 3 and "Entities:</strong> [{&#x27;text&#x27;" in written
    assert ("▶ Play" in written) is bool(conversation.audio)
    assert written.count("no audio timing") == (5 if conversation.audio else 0)
