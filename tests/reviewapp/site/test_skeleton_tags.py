"""The page skeleton's tags, rendered on their own: the page head's sections, the filter pieces, the results
section standing in the filters' errors, and the form card that posts and swaps itself."""

from __future__ import annotations

import re

import pytest
from django import forms
from django.template import Context, Template, TemplateSyntaxError


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
