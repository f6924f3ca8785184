"""What the strict-input tests share: the row counts a refused import must leave as they were."""

from pathlib import Path

import pytest

from reviewapp.corpus.services.imports import ImportFailed, dataset_import
from reviewapp.models import Conversation, Dataset, GoldLabel, JudgeVersion, Sweep, Turn, Verdict

LONG = "x" * 201


def counts() -> tuple[int, ...]:
    return tuple(
        model.objects.count() for model in (Dataset, Conversation, Turn, GoldLabel, Verdict, Sweep, JudgeVersion)
    )


def refused(path: Path, **kwargs) -> dict:
    """Import `path`, expect a refusal and no new row; return the first error."""
    before = counts()
    with pytest.raises(ImportFailed) as caught:
        dataset_import(path=path, fmt=kwargs.pop("fmt", "auto"), **kwargs)
    assert counts() == before, "a refused import wrote rows"
    return caught.value.summary.errors[0]
