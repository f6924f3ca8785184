"""The new-export form: judge, format, name, and the slice (known languages, datasets, gold sources, dates)."""

from django import forms

from reviewapp.corpus.forms.languages import LanguagesField
from reviewapp.exports.selectors import export_filters
from reviewapp.models import Dataset, Judge

FORMAT_CHOICES = [
    ("jsonl", "JSONL (one row a line)"),
    ("csv", "CSV"),
    ("parquet", "Parquet"),
    ("eva", "EVA validation set (the judge's shape)"),
]


class ExportForm(forms.Form):
    judge = forms.ModelChoiceField(queryset=Judge.objects.order_by("slug"), to_field_name="slug")
    format = forms.ChoiceField(choices=FORMAT_CHOICES, initial="jsonl")
    name = forms.CharField(
        required=False, max_length=150, help_text="Empty: the judge's slug. The same name again makes a new version."
    )
    languages = LanguagesField(
        help_text="None ticked: every one. A base language (fr) covers its regions (fr-CA).",
        error_messages={"invalid_choice": "Not a language code: %(value)s."},
    )
    datasets = forms.ModelMultipleChoiceField(
        queryset=Dataset.objects.order_by("name"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every dataset.",
    )
    gold_sources = forms.MultipleChoiceField(
        choices=[(s.value, s.label) for s in export_filters.SOURCE_PRIORITY],
        initial=list(export_filters.SOURCE_PRIORITY),
        widget=forms.CheckboxSelectMultiple,
        help_text="Per target the best source wins: adjudicated, then unanimous, then imported.",
    )
    date_from = forms.DateField(required=False, label="Labelled from", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(required=False, label="Labelled until", widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["languages"].load_choices()
