"""Forms for tier-1 signatures: the lead's page form and the admin form share one validation."""

from __future__ import annotations

import re

from django import forms

from reviewapp.corpus.forms.languages import LanguageField
from reviewapp.models import Judge, Signature, Turn
from scoring.signatures import KINDS, SignatureError, SignatureRule, validate_rule


def _lines(text: str) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def _rule_error(form: forms.Form, rule: SignatureRule) -> None:
    try:
        validate_rule(rule)
    except SignatureError as exc:
        message = str(exc)
        if "negation guard" in message:
            form.add_error("negation_guards", message)
        elif "regular expression" in message or "pattern" in message:
            form.add_error("pattern", message)
        else:
            form.add_error(None, message)


class SignatureForm(forms.Form):
    judge = forms.ModelChoiceField(queryset=Judge.objects.order_by("slug"), to_field_name="slug")
    language = LanguageField(blank="Choose a language", required=True)
    criterion = forms.CharField(max_length=100, required=False)
    intent = forms.CharField(max_length=100, help_text="What the pattern detects: decline, gloss, filler ...")
    kind = forms.ChoiceField(choices=[(k, Signature.Kind(k).label) for k in KINDS])
    pattern = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}))
    negation_guards = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One phrase per line; a match in the same sentence as one of them is ignored. "
        "Required for decline and refusal signatures.",
    )
    label = forms.CharField(max_length=100, required=False)
    rating = forms.FloatField(required=False)
    passed = forms.NullBooleanField(
        required=False,
        widget=forms.Select(choices=[("unknown", "(not set)"), ("true", "Pass"), ("false", "Fail")]),
    )
    evidence = forms.CharField(help_text="Ids of the turns that justify this signature, separated by spaces or commas.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["language"].load_choices()

    def clean_negation_guards(self):
        return _lines(self.cleaned_data.get("negation_guards", ""))

    def clean_evidence(self):
        return _turns_from_ids(self.cleaned_data["evidence"], required=True)

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        rule = SignatureRule(
            id=None,
            judge=data["judge"].slug,
            language=data["language"],
            criterion=data.get("criterion", ""),
            intent=data["intent"],
            kind=data["kind"],
            pattern=data["pattern"],
            negation_guards=tuple(data.get("negation_guards") or ()),
            label=data.get("label", ""),
            rating=data.get("rating"),
            passed=data.get("passed"),
        )
        _rule_error(self, rule)
        return data


def _turns_from_ids(raw: str, *, required: bool) -> list[Turn]:
    parts = [p for p in re.split(r"[\s,]+", (raw or "").strip()) if p]
    if not parts:
        if required:
            raise forms.ValidationError("Give turn ids (numbers) separated by spaces or commas.")
        return []
    if not all(p.isdigit() for p in parts):
        raise forms.ValidationError("Give turn ids (numbers) separated by spaces or commas.")
    ids = [int(p) for p in parts]
    turns = list(Turn.objects.filter(pk__in=ids).select_related("conversation"))
    missing = sorted(set(ids) - {t.pk for t in turns})
    if missing:
        raise forms.ValidationError(f"No turn with id {', '.join(map(str, missing))}.")
    return turns


class SignatureEditForm(forms.Form):
    """A lead's change to a signature: a new version, measured on gold by the service before it is kept."""

    kind = forms.ChoiceField(choices=[(k, Signature.Kind(k).label) for k in KINDS])
    pattern = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}))
    negation_guards = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One phrase per line. Removing one can make the signature match more: it needs new evidence.",
    )
    label = forms.CharField(max_length=100, required=False)
    rating = forms.FloatField(required=False)
    passed = forms.NullBooleanField(
        required=False,
        widget=forms.Select(choices=[("unknown", "(not set)"), ("true", "Pass"), ("false", "Fail")]),
    )
    new_evidence = forms.CharField(
        required=False,
        help_text="Ids of turns that justify the change, separated by spaces or commas. "
        "Needed when the change can make the signature match more (pattern, kind, fewer guards).",
    )
    note = forms.CharField(max_length=500, required=False, help_text="Why it changed (kept in the history).")

    @classmethod
    def for_signature(cls, signature: Signature, data=None) -> SignatureEditForm:
        initial = {
            "kind": signature.kind,
            "pattern": signature.pattern,
            "negation_guards": "\n".join(signature.negation_guards or []),
            "label": signature.label,
            "rating": signature.rating,
            # The select's own option values: a plain Select would render True as "True" and select nothing.
            "passed": {True: "true", False: "false"}.get(signature.passed, "unknown"),
        }
        return cls(data, initial=initial)

    def clean_negation_guards(self):
        return _lines(self.cleaned_data.get("negation_guards", ""))

    def clean_new_evidence(self):
        return _turns_from_ids(self.cleaned_data.get("new_evidence", ""), required=False)


class SignatureActiveForm(forms.Form):
    """Switch a signature off, or back on (a loosening: it needs a new evidence turn)."""

    active = forms.TypedChoiceField(choices=[("1", "on"), ("0", "off")], coerce=lambda v: v == "1")
    new_evidence = forms.CharField(required=False, help_text="Switching back on needs a new evidence turn.")
    note = forms.CharField(max_length=500, required=False)

    def clean_new_evidence(self):
        return _turns_from_ids(self.cleaned_data.get("new_evidence", ""), required=False)


class SignatureAdminForm(forms.ModelForm):
    """The admin form refuses what the service refuses: invalid rules and loosening without new evidence."""

    class Meta:
        model = Signature
        fields = [
            "judge",
            "language",
            "criterion",
            "intent",
            "kind",
            "pattern",
            "negation_guards",
            "label",
            "rating",
            "passed",
            "active",
            "evidence",
            "created_by",
        ]

    def clean(self):
        data = super().clean()
        if self.errors or data.get("judge") is None:
            return data
        guards = data.get("negation_guards") or []
        if not isinstance(guards, list) or not all(isinstance(g, str) for g in guards):
            self.add_error("negation_guards", "Negation guards must be a JSON list of phrases.")
            return data
        rule = SignatureRule(
            id=self.instance.pk,
            judge=data["judge"].slug,
            language=data.get("language", ""),
            criterion=data.get("criterion", ""),
            intent=data.get("intent", ""),
            kind=data.get("kind", ""),
            pattern=data.get("pattern", ""),
            negation_guards=tuple(guards),
            label=data.get("label", ""),
            rating=data.get("rating"),
            passed=data.get("passed"),
        )
        _rule_error(self, rule)
        evidence = set(data.get("evidence") or [])
        if self.instance.pk is None:
            if not evidence:
                self.add_error("evidence", "A signature needs at least one evidence turn that justifies it.")
            return data
        before = Signature.objects.get(pk=self.instance.pk)
        loosened = (
            rule.pattern != before.pattern
            or rule.kind != before.kind
            or bool(set(before.negation_guards or ()) - set(guards))
            or (data.get("active") and not before.active)
        )
        if loosened and not evidence - set(before.evidence.all()):
            self.add_error(
                "evidence", "This change can make the signature match more: add at least one new evidence turn."
            )
        return data
