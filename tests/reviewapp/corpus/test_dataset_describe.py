"""A lead says what a dataset is: its kind and description, audited; others cannot."""

import pytest

from reviewapp.corpus.services.datasets import DatasetError, dataset_describe
from reviewapp.models import AuditEvent, Dataset, Role

pytestmark = pytest.mark.django_db


def test_a_lead_describes_a_dataset_once_and_it_is_audited(make_user):
    lead = make_user("lea", role=Role.LEAD)
    dataset = Dataset.objects.create(name="calls-march", kind=Dataset.Kind.VALIDATION)
    dataset_describe(actor=lead, dataset=dataset, kind="demo", description="  Scripted calls.  ")
    dataset.refresh_from_db()
    assert (dataset.kind, dataset.description) == ("demo", "Scripted calls.")
    (event,) = AuditEvent.objects.filter(action="dataset.describe")
    assert event.before == {"kind": "validation", "description": ""}
    assert event.after == {"kind": "demo", "description": "Scripted calls."}
    dataset_describe(actor=lead, dataset=dataset, kind="demo", description="Scripted calls.")
    assert AuditEvent.objects.filter(action="dataset.describe").count() == 1  # nothing changed, nothing logged


def test_reviewers_cannot_describe_and_kinds_are_checked(make_user):
    dataset = Dataset.objects.create(name="calls-april")
    with pytest.raises(DatasetError, match="Only leads"):
        dataset_describe(actor=make_user("ana", languages=["fr"]), dataset=dataset, kind="demo", description="x")
    with pytest.raises(DatasetError, match="Unknown dataset kind 'toy'"):
        dataset_describe(actor=make_user("lea", role=Role.LEAD), dataset=dataset, kind="toy", description="x")
    dataset.refresh_from_db()
    assert dataset.description == "" and not AuditEvent.objects.filter(action="dataset.describe").exists()
