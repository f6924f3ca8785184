"""The lead's forms on a dispute: the decision (the judge's own scale, categories, failure modes,
rationale) and sending an item back to reviewers."""

from __future__ import annotations

from django import forms

from reviewapp.models import Adjudication, Category, Judge
from reviewapp.quality.selectors.outcomes import outcome_for, scale_labels
from reviewapp.review.selectors import verdict_shapes


class DecisionForm(forms.Form):
    outcome = forms.ChoiceField(label="Final label", widget=forms.RadioSelect, required=False)
    rating = forms.FloatField(label="Rating", required=False)
    label = forms.CharField(label="Label", max_length=100, required=False)
    categories = forms.ModelMultipleChoiceField(
        label="Failure categories",
        queryset=Category.objects.filter(active=True).order_by("name"),
        widget=forms.CheckboxSelectMultiple,
        required=False,
        to_field_name="slug",
    )
    judge_modes = forms.MultipleChoiceField(
        label="This judge's failure modes", widget=forms.CheckboxSelectMultiple, required=False, choices=()
    )
    rationale = forms.CharField(label="Rationale", widget=forms.Textarea(attrs={"rows": 3}))

    def __init__(self, *args, judge: Judge, categories: list[Category] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.judge = judge
        # The judge's own failure modes beside the shared taxonomy, as on the review form.
        modes = verdict_shapes.review_grain(judge=judge).failure_modes
        if modes:
            self.fields["judge_modes"].choices = [(m, m) for m in modes]
        else:
            del self.fields["judge_modes"]
        self.scale = scale_labels(judge)
        if categories is not None:
            self.fields["categories"].queryset = Category.objects.filter(pk__in=[c.pk for c in categories])
        if self.scale:
            self.fields["outcome"].choices = [(v, v) for v in self.scale]
            self.fields["outcome"].required = True
            del self.fields["rating"], self.fields["label"]
        else:
            del self.fields["outcome"]

    def decision(self) -> dict:
        """The label fields for adjudication_decide, from whichever inputs this judge's scale uses."""
        data = self.cleaned_data
        if not self.scale:
            return {"rating": data.get("rating"), "label": data.get("label", ""), "passed": None}
        value = data["outcome"]
        if value in ("pass", "fail"):
            return {"rating": None, "label": "", "passed": value == "pass"}
        return {"rating": float(value), "label": "", "passed": None}


class SendBackForm(forms.Form):
    note = forms.CharField(label="Note to reviewers", widget=forms.Textarea(attrs={"rows": 2}), max_length=2000)
    to = forms.ChoiceField(
        label="Send to",
        choices=[("original", "Its reviewers, to revise their labels"), ("any", "Any reviewer of the language")],
        initial="original",
        required=False,
        widget=forms.RadioSelect,
    )


def decision_initial(adjudication: Adjudication | None, *, judge: Judge) -> dict:
    """The decision form's values when a decision exists: its rationale, categories and label, the label
    given as the judge's own outcome (one function turns any label into that outcome)."""
    if adjudication is None:
        return {}
    outcome = outcome_for(judge, rating=adjudication.rating, passed=adjudication.passed, label=adjudication.label)
    return {
        "rationale": adjudication.rationale,
        "categories": [c.slug for c in adjudication.categories.all()],
        "rating": adjudication.rating,
        "label": adjudication.label,
        "outcome": outcome.value,
    }
