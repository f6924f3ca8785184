"""The quality page's slice filters: the same choices as `judge_report`'s options."""

from __future__ import annotations

from django import forms

from reviewapp.models import Dataset, JudgeVersion
from reviewapp.quality.selectors import quality_slice


class SliceFilterForm(forms.Form):
    """A filter form whose cleaned data holds the slice its fields name (`slice`); the filters a form has no
    field for are left open. An unknown dataset or sweep, or a date range that ends before it starts, is a
    form error."""

    language = forms.CharField(required=False, max_length=35, label="Language")
    dataset = forms.MultipleChoiceField(required=False, label="Datasets")

    def __init__(self, data=None, *, datasets: list[Dataset]):
        super().__init__(data)
        self.fields["dataset"].choices = [(d.name, d.name) for d in datasets]

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            data["slice"] = quality_slice.slice_for(
                datasets=data.get("dataset") or [],
                sweep_id=data.get("sweep"),
                language=data.get("language") or "",
                date_from=data.get("date_from"),
                date_to=data.get("date_to"),
                unresolved=data.get("unresolved") or "excluded",
            )
        except quality_slice.SliceError as error:
            raise forms.ValidationError(str(error)) from None
        return data


class QualityFilterForm(SliceFilterForm):
    version = forms.ChoiceField(required=False, label="Version")
    sweep = forms.IntegerField(required=False, min_value=1, label="Sweep")
    date_from = forms.DateField(required=False, label="Verdicts from", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(required=False, label="Verdicts until", widget=forms.DateInput(attrs={"type": "date"}))
    unresolved = forms.ChoiceField(
        required=False,
        choices=[("excluded", "left out"), ("wrong", "counted wrong (EVA)")],
        label="Unresolved answers",
    )

    def __init__(self, data=None, *, versions: list[JudgeVersion], datasets: list[Dataset]):
        super().__init__(data, datasets=datasets)
        self.versions = versions
        self.fields["version"].choices = [("", "latest")] + [(str(v.pk), v.version) for v in versions]

    def clean_version(self) -> JudgeVersion | None:
        value = self.cleaned_data.get("version") or ""
        if not value:
            return self.versions[-1] if self.versions else None
        return next(v for v in self.versions if str(v.pk) == value)


class CompareFilterForm(SliceFilterForm):
    """The comparison page's slice: language and datasets (both versions are read on the same slice)."""
