"""A judge Tribunal knows only from an import (its versions are placeholders holding imported verdicts,
with no prompt): every lead page about it answers, instead of failing on the spec it does not have."""

import json

import pytest
from django.test import Client
from django.urls import reverse

from reviewapp.corpus.services.imports import dataset_import
from reviewapp.models import Judge, JudgeVersion, Sweep
from reviewapp.models.people import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def imported(tmp_path):
    records = [
        {
            "external_id": f"call-{i}",
            "language": "fr",
            "turns": [
                {"role": "user", "text": "Bonjour"},
                {
                    "role": "agent",
                    "text": "Bonjour, je vérifie votre commande.",
                    "labels": [{"judge": "politeness", "rating": 1 + i % 3}],
                    "verdicts": [{"judge": "politeness", "version": "v7", "rating": 1 + (i + 1) % 3}],
                },
            ],
        }
        for i in range(6)
    ]
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    dataset_import(path=path, fmt="auto", dataset_name=None, language=None, skip_invalid=False)
    judge = Judge.objects.get(slug="politeness")
    version = JudgeVersion.objects.get(judge=judge)
    assert version.spec.get("imported") is True
    return judge, version, Sweep.objects.get(kind=Sweep.Kind.IMPORT)


def test_every_lead_page_of_an_imported_judge_answers(imported, make_user):
    judge, version, sweep = imported
    client = Client(raise_request_exception=False)
    client.force_login(make_user("lea", role=Role.LEAD, languages=["fr"]))
    pages = {
        "quality": reverse("quality_judge", args=[judge.slug]),
        "compare": reverse("compare_versions", args=[judge.slug]),
        "draft": reverse("draft_new", args=[judge.slug]),
        "versions": reverse("version_list", args=[judge.slug]),
        "version": reverse("draft_version", args=[judge.slug, version.pk]),
        "coverage": reverse("coverage_page", args=[judge.slug]),
        "plan": reverse("plan_page", args=[judge.slug]),
        "sweep": reverse("sweep_detail", args=[sweep.pk]),
        "sweeps": reverse("sweep_list"),
        "quality index": reverse("quality_index"),
    }
    statuses = {name: client.get(url).status_code for name, url in pages.items()}
    assert statuses == dict.fromkeys(pages, 200)


def test_drafting_from_an_imported_version_says_why_and_saves_nothing(imported, make_user):
    judge, version, _ = imported
    client = Client()
    client.force_login(make_user("lea", role=Role.LEAD, languages=["fr"]))
    page = client.get(reverse("draft_new", args=[judge.slug])).content.decode()
    assert "v7 has no prompt to draft from." in page
    assert 'name="guidance_' not in page  # no editor for a prompt that is not there

    response = client.post(
        reverse("draft_new", args=[judge.slug]), {"version": version.pk, "label": "v8", "guidance_fr": "Sois bref."}
    )
    assert response.status_code == 400
    assert "v7 has no prompt to draft from." in response.content.decode()
    assert list(JudgeVersion.objects.filter(judge=judge).values_list("version", flat=True)) == ["v7"]
