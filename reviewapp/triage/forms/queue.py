"""The queue's filters, parsed once by one form from a query string and from the session alike.

A value that does not parse (junk in a URL, an old session, a number where a code belongs) is
dropped with its error, never passed on: the queue then shows every item for that filter and says
which filter it ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.core.validators import RegexValidator

from reviewapp.models import ReviewItem

LANGUAGE = RegexValidator(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$", "Not a BCP 47 language code.")
SLUG = RegexValidator(r"^[-a-zA-Z0-9_]+$", "Not a judge slug.")
# "after this item": the last row of the previous page, as priority:id.
CURSOR = RegexValidator(r"^-?\d{1,10}:\d{1,10}$", "Not a queue position.")
MAX_ID = 2**31 - 1
FIELDS = ("language", "judge", "reason", "dataset", "status")


class QueueFilterForm(forms.Form):
    language = forms.CharField(required=False, max_length=35, validators=[LANGUAGE])
    judge = forms.CharField(required=False, max_length=100, validators=[SLUG])
    reason = forms.ChoiceField(required=False, choices=[("", "Any reason"), *ReviewItem.Reason.choices])
    dataset = forms.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    status = forms.ChoiceField(required=False, choices=[("", "To review"), *ReviewItem.Status.choices])
    after = forms.CharField(required=False, max_length=24, validators=[CURSOR])

    @classmethod
    def from_params(cls, params: Mapping[str, Any] | None) -> QueueFilterForm:
        """A bound form from a QueryDict, a POST, or the dict kept in the session."""
        data: dict[str, str] = {}
        if params:
            for name in (*FIELDS, "after"):
                value = params.get(name)
                if isinstance(value, bool) or value is None:
                    continue
                if isinstance(value, (str, int)):
                    data[name] = str(value).strip()
        form = cls(data)
        form.is_valid()
        return form

    def value(self, name: str) -> Any:
        """The field's clean value, or empty when it did not parse."""
        if name in self.errors:
            return None if name in ("dataset",) else ""
        return self.cleaned_data.get(name)

    def cursor(self) -> tuple[int, int] | None:
        after = self.value("after")
        if not after:
            return None
        priority, item_id = after.split(":")
        priority_i, item_i = int(priority), int(item_id)
        if not (-MAX_ID - 1 <= priority_i <= MAX_ID and item_i <= MAX_ID):
            return None
        return priority_i, item_i

    def ignored(self) -> list[str]:
        """Each dropped filter with why, for the page to say."""
        return [f"{name}: {' '.join(errors)}" for name, errors in self.errors.items()]
