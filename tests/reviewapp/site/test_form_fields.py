"""One form field rendering and the form choices it offers: checkboxes before their labels, languages
from the data, only runnable judge versions on the sweep form, the decision's default from outcome_for."""

from __future__ import annotations

import pytest
from django import forms
from django.template import Context, Template

from reviewapp.adjudication.forms.disputes import decision_initial
from reviewapp.exports.forms.exports import ExportForm
from reviewapp.judging.forms.sweeps import SweepForm
from reviewapp.models import Adjudication, Conversation, Judge, JudgeVersion, Role
from tests import factories
from tests.factories import dataset_of_calls, store_judge

pytestmark = pytest.mark.django_db


class _Sample(forms.Form):
    agree = forms.BooleanField(label="I agree", required=False)
    size = forms.IntegerField(label="Size")
    colour = forms.ChoiceField(label="Colour", choices=[("r", "Red"), ("g", "Green")], widget=forms.RadioSelect)


def _render(form) -> str:
    return Template('{% for field in form %}{% include "includes/field.html" %}{% endfor %}').render(
        Context({"form": form})
    )


def test_a_checkbox_sits_inside_its_label_before_the_text_and_errors_are_announced():
    html = _render(_Sample({"size": "x"}))
    assert (
        '<label class="choice" for="id_agree"><input type="checkbox" name="agree" id="id_agree"> <span>I agree</span>'
        in html
    )
    assert '<fieldset class="choices" id="id_colour">' in html and "<legend>Colour</legend>" in html
    assert '<label class="choice" for="id_colour_0"><input type="radio" name="colour" value="r"' in html
    assert '<div class="field field--number field--invalid" data-field="size">' in html
    assert '<p class="field__error" role="alert">Enter a whole number.</p>' in html


def test_the_sweep_form_offers_only_versions_a_sweep_can_run():
    runnable = store_judge("conciseness")
    placeholder = JudgeVersion.objects.create(
        judge=runnable.judge, version="imported-1", spec={"slug": "conciseness", "imported": True}, spec_hash="h-imp"
    )
    promptless = JudgeVersion.objects.create(
        judge=runnable.judge, version="no-prompt", spec={"slug": "conciseness"}, spec_hash="h-none"
    )
    offered = set(SweepForm().fields["judge_versions"].queryset.values_list("pk", flat=True))
    assert offered == {runnable.pk} and placeholder.pk not in offered and promptless.pk not in offered


def test_language_selects_offer_the_data_languages_and_their_base_languages():
    dataset_of_calls("calls", {"a": ("fr-CA", ["Bonjour"]), "b": ("ja", ["はい"]), "c": ("en", ["Hi"])})
    sweep_choices = SweepForm().fields["language"].choices
    assert sweep_choices == [
        ("", "Every language of the dataset"),
        ("en", "en"),
        ("fr", "fr"),
        ("fr-CA", "fr-CA"),
        ("ja", "ja"),
    ]
    html = str(ExportForm()["languages"])
    assert html.count('type="checkbox" name="languages"') == 4 and 'value="fr-CA"' in html


def test_a_language_field_takes_a_well_formed_code_with_no_data_and_refuses_a_malformed_one():
    Conversation.objects.create(dataset=factories.dataset(), external_id="x", language="fr")
    judge = factories.judge()
    good = ExportForm({"judge": judge.slug, "format": "csv", "languages": ["fr", "de"], "gold_sources": ["imported"]})
    assert good.is_valid(), good.errors
    assert good.cleaned_data["languages"] == ["fr", "de"]
    bad = ExportForm({"judge": judge.slug, "format": "csv", "languages": ["fr;drop"], "gold_sources": ["imported"]})
    assert not bad.is_valid() and bad.errors["languages"] == ["Not a language code: fr;drop."]


def test_the_decision_default_is_the_adjudication_as_the_judge_scores_it(make_user):
    lead = make_user("lea", role=Role.LEAD)
    ordinal = factories.make_item()
    adjudication = Adjudication.objects.create(item=ordinal, lead=lead, rating=2.0, rationale="Two.")
    initial = decision_initial(adjudication, judge=ordinal.judge)
    assert initial["outcome"] == "2" and initial["rationale"] == "Two." and initial["rating"] == 2.0
    Judge.objects.create(slug="polite", scale=Judge.Scale.BINARY)
    binary = factories.make_item(judge_slug="polite", verdict_rating=None, verdict_passed=True)
    failed = Adjudication.objects.create(item=binary, lead=lead, passed=False, rationale="Rude.")
    assert decision_initial(failed, judge=binary.judge)["outcome"] == "fail"
    assert decision_initial(None, judge=binary.judge) == {}


def test_skeleton_tags_render_pairs_objects_pills_and_counts():
    judges = [factories.judge("conciseness"), factories.judge("brevity")]
    template = Template(
        "{% load skeleton %}"
        '{% filter_select "kind" "Kind" kinds "b" blank="Any" id="k" %}'
        '{% filter_select "judge" "Judge" judges "brevity" blank="Every judge" id="j" value="slug" %}'
        "{% status_pill 'failed' 'Failed' %}{% status_pill 'running' %}{% status_pill 'done' 'Done' %}"
        '{% count 1 "person" plural="people" %}{% endcount %}{% count 2 "person" plural="people" %} here{% endcount %}'
    )
    html = template.render(Context({"kinds": [("a", "Apple"), ("b", "Banana")], "judges": judges}))
    assert '<option value="b" selected>Banana</option>' in html and '<option value="a">Apple</option>' in html
    assert (
        '<option value="">Every judge</option>' in html and '<option value="brevity" selected>brevity</option>' in html
    )
    assert '<span class="pill pill--error" data-status="failed">Failed</span>' in html
    assert '<span class="pill pill--warn" data-status="running">running</span>' in html
    assert '<span class="pill" data-status="done">Done</span>' in html
    assert 'data-count="1">1 person</p>' in html and 'data-count="2">2 people here</p>' in html
