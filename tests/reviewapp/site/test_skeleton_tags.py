"""The page skeleton's tags, rendered on their own: the page head's sections, the filter pieces, the results
section standing in the filters' errors, and the form card that posts and swaps itself."""

from __future__ import annotations

import re

import pytest
from django import forms
from django.template import Context, Template, TemplateSyntaxError
from django.urls import reverse
from django.utils.safestring import mark_safe


def _render(source: str, **context) -> str:
    return Template(source).render(Context(context))


def test_the_page_head_has_its_heading_and_only_the_sections_given():
    full = _render(
        '{% pagehead %}<span class="judge-name">{{ slug }}</span> against gold'
        '{% lede %}Ordinal, 1 to 3{% actions %}<a class="button" href="/x">Compare</a>{% endpagehead %}',
        slug="brevity",
    )
    heading = re.search(r'<div class="pagehead">\s*<div>\s*<h1>(.*?)</h1>\s*<p class="muted">(.*?)</p>', full, re.S)
    assert heading and heading.groups() == ('<span class="judge-name">brevity</span> against gold', "Ordinal, 1 to 3")
    assert '<a class="button" href="/x">Compare</a>' in full
    bare = _render("{% pagehead %}People{% endpagehead %}")
    assert "<h1>People</h1>" in bare and "muted" not in bare and "<a" not in bare
    escaped = _render("{% pagehead %}{{ name }}{% endpagehead %}", name="<b>x</b>")
    assert "<h1>&lt;b&gt;x&lt;/b&gt;</h1>" in escaped
    with pytest.raises(TemplateSyntaxError, match=re.escape("one {% lede %} at the most")):
        Template("{% pagehead %}A{% lede %}b{% lede %}c{% endpagehead %}")


def test_filter_selects_take_several_values_no_blank_and_a_hotkey_and_boxes_take_their_kind():
    html = _render(
        '{% filter_select "dataset" "Datasets" choices picked id="d" multiple=True %}'
        '{% filter_select "status" "Status" choices "2" id="s" hotkey="/" %}'
        '{% filter_input "sweep" "Sweep" None id="w" type="number" placeholder="any" size=5 %}'
        '{% filter_input "language" "Language" "fr" id="l" %}',
        choices=[(1, "calls"), (2, "chats"), (3, "mails")],
        picked=["1", 3],
    )
    assert '<select id="d" name="dataset" multiple size="3">' in html
    assert re.findall(r'<option value="(\d)" selected>', html) == ["1", "3", "2"]
    assert '<select id="s" name="status" data-hotkey="/" aria-keyshortcuts="/">' in html
    assert '<option value="">' not in html
    assert '<input type="number" id="w" name="sweep" value="" min="1" placeholder="any" size="5">' in html
    assert '<input type="text" id="l" name="language" value="fr">' in html


def test_the_results_show_the_filters_errors_in_place_of_the_body():
    source = '{% results "report" errors=errors %}<p id="body">rows</p>{% endresults %}'
    failed = _render(source, errors={"dataset": ["Select a valid choice."], "__all__": ["Pick two versions."]})
    assert failed.startswith('<section id="report" class="results" data-skeleton="results" aria-live="polite">')
    assert 'id="filter-errors"' in failed and 'id="body"' not in failed
    assert "<li>dataset: Select a valid choice.</li>" in failed and "<li>Pick two versions.</li>" in failed
    fine = _render(source, errors={})
    assert 'id="body"' in fine and "filter-errors" not in fine


def test_the_results_body_is_not_rendered_when_the_filters_failed():
    class Rows:
        rendered = 0

        def __iter__(self):
            Rows.rendered += 1
            return iter(["a", "b"])

    source = '{% results "report" errors=errors %}{% for row in rows %}<i>{{ row }}</i>{% endfor %}{% endresults %}'
    assert "<i>a</i>" not in _render(source, errors={"dataset": ["Select a valid choice."]}, rows=Rows())
    assert Rows.rendered == 0
    assert "<i>a</i><i>b</i>" in _render(source, errors={}, rows=Rows()) and Rows.rendered == 1


class _Note(forms.Form):
    text = forms.CharField()

    def clean(self):
        raise forms.ValidationError("Not now.")


def test_the_form_card_posts_to_itself_with_its_token_title_and_errors():
    form = _Note({"text": "hello"})
    assert not form.is_valid()
    html = _render(
        '{% formcard "note-form" "people_list" form=form title="Add a note" %}<button>Add</button>{% endformcard %}',
        form=form,
        csrf_token="tok-123",
    )
    assert '<form id="note-form" class="form card" method="post" action="/people/"' in html
    assert 'hx-post="/people/" hx-target="#note-form" hx-swap="outerHTML" aria-labelledby="note-form-title">' in html
    assert '<h2 class="card__title" id="note-form-title">Add a note</h2>' in html
    assert '<input type="hidden" name="csrfmiddlewaretoken" value="tok-123">' in html
    assert '<div class="alert alert--error" role="alert"><p>Not now.</p></div>' in html
    assert html.index("Not now.") < html.index("<button>Add</button>")
    untitled = _render('{% formcard "f" "people_list" form=form %}{% endformcard %}', form=_Note())
    assert "aria-labelledby" not in untitled and "<h2" not in untitled and "alert" not in untitled


# The include `filter_select` rendered before it was written in Python (templates/includes/filter_select.html).
FORMER_FILTER_SELECT = """<div class="field field--inline">
  <label for="{{ id }}">{{ label }}</label>
  <select id="{{ id }}" name="{{ name }}"{% if multiple %} multiple size="3"{% endif %}{% if hotkey %} data-hotkey="{{ hotkey }}" aria-keyshortcuts="{{ hotkey }}"{% endif %}>
    {% if blank %}<option value="">{{ blank }}</option>{% endif %}
    {% for option in options %}<option value="{{ option.value }}"{% if option.selected %} selected{% endif %}>{{ option.label }}</option>{% endfor %}
  </select>
</div>
"""


class _Judge:
    def __init__(self, slug, name):
        self.slug, self.name = slug, name


def _former(*, options=(), **values) -> str:
    """The former include rendered with `values`; `options` as (value, label, selected) triples."""
    shown = [{"value": value, "label": label, "selected": selected} for value, label, selected in options]
    return Template(FORMER_FILTER_SELECT).render(Context({**values, "options": shown}))


HOSTILE = "<script>\"x\" & 'y'</script>"


@pytest.mark.parametrize(
    ("tag", "context", "former"),
    [
        (
            '{% filter_select "kind" "Kind" kinds "b" blank="Any" id="k" %}',
            {"kinds": ["a", "b", HOSTILE, 3]},
            {
                "id": "k",
                "name": "kind",
                "label": "Kind",
                "blank": "Any",
                "options": [("a", "a", False), ("b", "b", True), (HOSTILE, HOSTILE, False), (3, 3, False)],
            },
        ),
        (
            '{% filter_select "judge" label judges picked blank=blank id=ident value="slug" text="name" hotkey="/" %}',
            {
                "label": HOSTILE,
                "ident": "j<1>",
                "blank": "Every <judge>",
                "judges": [_Judge("brevity", "Brevity & co"), _Judge('a"b', HOSTILE)],
                "picked": 'a"b',
            },
            {
                "id": "j<1>",
                "name": "judge",
                "label": HOSTILE,
                "blank": "Every <judge>",
                "hotkey": "/",
                "options": [("brevity", "Brevity & co", False), ('a"b', HOSTILE, True)],
            },
        ),
        (
            '{% filter_select "dataset" "Datasets" choices picked id="d" multiple=True %}',
            {"choices": [(1, "calls"), (1234567, mark_safe("<b>kept</b>")), (3, HOSTILE)], "picked": ["1", 3]},
            {
                "id": "d",
                "name": "dataset",
                "label": "Datasets",
                "multiple": True,
                "options": [(1, "calls", True), (1234567, mark_safe("<b>kept</b>"), False), (3, HOSTILE, True)],
            },
        ),
        (
            '{% filter_select "status" "Status" choices picked id="s" blank="" %}',
            {"choices": [], "picked": None},
            {"id": "s", "name": "status", "label": "Status"},
        ),
        (
            '{% filter_select "status" "Status" choices picked id="s" %}',
            {"choices": ["", "open"], "picked": ""},  # nothing chosen: the empty value is not selected
            {"id": "s", "name": "status", "label": "Status", "options": [("", "", False), ("open", "open", False)]},
        ),
        (
            '{% filter_select "n" "N" choices picked id="n" %}',
            {"choices": [0, 1, ""], "picked": 0},
            {"id": "n", "name": "n", "label": "N", "options": [(0, 0, True), (1, 1, False), ("", "", False)]},
        ),
    ],
)
@pytest.mark.parametrize("grouped", [False, True])
def test_filter_select_writes_the_former_includes_markup(settings, tag, context, former, grouped):
    settings.USE_THOUSAND_SEPARATOR = grouped
    written = _render(tag, **context)
    assert written == _former(**former)
    assert "<script>" not in written and "<judge>" not in written


def test_filter_select_escapes_nothing_twice_and_keeps_safe_text():
    html = _render(
        '{% filter_select "d" "D" choices "1" id="d" %}', choices=[(1, mark_safe("<b>kept</b>")), (2, "a & b")]
    )
    assert '<option value="1" selected><b>kept</b></option>' in html
    assert '<option value="2">a &amp; b</option>' in html


# The includes the filter bar and the page head rendered before they were written in Python
# (templates/includes/filter_bar.html and page_head.html).
FORMER_FILTER_BAR = """<form class="filters" method="get" action="{{ url }}" role="search" data-skeleton="filter-bar"
      hx-get="{{ url }}" hx-target="{{ target }}" hx-swap="outerHTML"
      hx-trigger="{{ trigger|default:'change, submit' }}" hx-push-url="true"{% if indicator %} hx-indicator="{{ target }}"{% endif %}>
  {{ body }}
  <button type="submit" class="button">{{ button|default:"Filter" }}</button>
</form>
"""
FORMER_PAGE_HEAD = """<div class="pagehead">
  <div>
    <h1>{{ heading }}</h1>
    {% if lede %}<p class="muted">{{ lede }}</p>{% endif %}
  </div>
  {{ actions }}
</div>
"""


@pytest.mark.parametrize(
    ("arguments", "context", "former"),
    [
        ("target=target", {"target": "#results"}, {"target": "#results"}),
        ("target=target indicator=True", {"target": '#a"<b>'}, {"target": '#a"<b>', "indicator": True}),
        (
            'target="#r" trigger=trigger button=button indicator=on',
            {"trigger": "", "button": HOSTILE, "on": 1},
            {"target": mark_safe("#r"), "trigger": "", "button": HOSTILE, "indicator": 1},
        ),
        (
            'target="#r" trigger="keyup changed delay:300ms" button="Go <now>"',
            {},
            # a literal in a template is safe text
            {
                "target": mark_safe("#r"),
                "trigger": mark_safe("keyup changed delay:300ms"),
                "button": mark_safe("Go <now>"),
            },
        ),
        ("", {}, {}),
    ],
)
def test_the_filter_bar_writes_the_former_includes_markup(arguments, context, former):
    body = '<input name="{{ field }}">{% if flag %} & more{% endif %}'
    written = _render(
        f'{{% filterbar "queue_index" {arguments} %}}{body}{{% endfilterbar %}}', field=HOSTILE, **context
    )

    values = former | {"url": reverse("queue_index"), "body": _render(body, field=HOSTILE)}
    assert written == Template(FORMER_FILTER_BAR).render(Context(values))
    assert "<script>" not in written and written.count("<form") == 1


@pytest.mark.parametrize(
    "source",
    [
        "{% pagehead %}{{ name }} against gold{% lede %}Ordinal & {{ name }}{% actions %}<a href='/x'>{{ name }}</a>{% endpagehead %}",
        "{% pagehead %}People{% endpagehead %}",
        "{% pagehead %}People{% lede %}{% endpagehead %}",
        "{% pagehead %}People{% actions %}<a href='/y'>Add</a>{% endpagehead %}",
        "{% pagehead %}{{ name }}{% lede %} {% actions %}{% endpagehead %}",
    ],
)
def test_the_page_head_writes_the_former_includes_markup(source):
    written = _render(source, name=HOSTILE)
    heading, _, rest = source.removeprefix("{% pagehead %}").removesuffix("{% endpagehead %}").partition("{% lede %}")
    if "{% lede %}" not in source:
        heading, _, rest = heading.partition("{% actions %}")
        lede, actions = None, rest if "{% actions %}" in source else None
    else:
        lede, _, actions = rest.partition("{% actions %}")
        actions = actions if "{% actions %}" in source else None
    parts = {"heading": _render(heading, name=HOSTILE)}
    if lede is not None:
        parts["lede"] = _render(lede, name=HOSTILE)
    if actions is not None:
        parts["actions"] = _render(actions, name=HOSTILE)
    assert written == Template(FORMER_PAGE_HEAD).render(Context(parts))
    assert "<script>" not in written
