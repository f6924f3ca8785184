"""The start-a-sweep form: it offers only the judge versions a sweep can run and the known languages."""

from django import forms

from reviewapp.corpus.forms.languages import LanguageField
from reviewapp.judging.selectors import sweeps as sweep_selectors
from reviewapp.judging.services import sweep_scope
from reviewapp.judging.services import sweeps as sweeps_service
from reviewapp.models import Category, Dataset, JudgeVersion

SCOPES = [
    ("", "Every target"),
    ("commented", "What reviewers commented on"),
    ("gold", "Gold-labelled targets"),
    ("moved", "What moved between two versions"),
]
SCOPE_LABELS = {"all": "every target", **{kind: label for kind, label in SCOPES if kind}}


class JudgeVersionChoices(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj) -> str:
        return f"{obj.judge.slug}@{obj.version}" + (f" ({obj.source})" if obj.source else "")


class SweepForm(forms.Form):
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.order_by("name"))
    judge_versions = JudgeVersionChoices(queryset=JudgeVersion.objects.none(), widget=forms.CheckboxSelectMultiple)
    repeats = forms.IntegerField(min_value=1, max_value=sweeps_service.MAX_REPEATS, initial=1)
    variance_sample = forms.FloatField(
        min_value=0, max_value=1, initial=0.1, help_text="Share of LLM targets run `repeats` times."
    )
    qa_sample = forms.FloatField(
        min_value=0, max_value=1, initial=0.05, help_text="Share of resolved items sent to QA."
    )
    language = LanguageField(blank="Every language of the dataset", help_text="Empty: every language of the dataset.")
    scope = forms.ChoiceField(choices=SCOPES, required=False, help_text="Re-score only part of the dataset.")
    category = forms.ModelChoiceField(
        queryset=Category.objects.filter(active=True),
        to_field_name="slug",
        required=False,
        help_text="With 'commented': only comments with this category.",
    )
    moved = forms.CharField(
        required=False, max_length=140, help_text="With 'moved': two version labels of the swept judge, A,B."
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["judge_versions"].queryset = sweep_selectors.runnable_judge_versions()
        self.fields["language"].load_choices()

    def clean(self):
        data = super().clean()
        kind = data.get("scope") or ""
        text = f"moved:{data.get('moved') or ''}" if kind == "moved" else kind
        category = data.get("category")
        try:
            data["scope_value"] = sweep_scope.scope_parse(text, category=category.slug if category else "")
        except sweep_scope.ScopeError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return data


def scope_label(scope) -> str:
    """What a sweep's scope covers, in words: "gold-labelled targets", "what moved: v1 → v2"."""
    return (
        SCOPE_LABELS.get(scope.kind, scope.kind)
        + (f" ({scope.category})" if scope.category else "")
        + (f": {scope.versions[0]} → {scope.versions[1]}" if scope.versions else "")
    )
