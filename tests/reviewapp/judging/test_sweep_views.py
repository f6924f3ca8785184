"""Sweep pages: list, start form, detail with htmx progress; each as full page, fragment and forbidden."""

import re

import pytest
from django.urls import reverse

from reviewapp.models import Sweep
from tests.factories import HTMX, dataset_of_calls, store_judge

pytestmark = pytest.mark.django_db


@pytest.fixture
def judge():
    return store_judge("conciseness")


@pytest.fixture
def fr_sweep(judge, scripted_llm, run_sweep):
    dataset = dataset_of_calls("fr-calls", {"a": ("fr", ["Bonjour [[r=2]]", "Au revoir [[unsure]]"])})
    return run_sweep(dataset=dataset, judge_versions=[judge], repeats=2, variance_sample=1.0, qa_sample=0)


@pytest.fixture
def ja_sweep(judge, scripted_llm, run_sweep):
    dataset = dataset_of_calls("ja-calls", {"a": ("ja", ["はい"])})
    return run_sweep(dataset=dataset, judge_versions=[judge], qa_sample=0)


def no_inline_style_or_script(html: str) -> None:
    assert not re.search(r"\sstyle=", html)
    assert "<script>" not in html


def test_list_shows_only_the_reviewers_languages(client, make_user, fr_sweep, ja_sweep):
    client.force_login(make_user("ana", languages=["fr"]))
    response = client.get(reverse("sweep_list"))
    html = response.content.decode()
    assert response.status_code == 200
    assert f"#{fr_sweep.pk}<" in html and f"#{ja_sweep.pk}<" not in html
    assert "Start a sweep" not in html
    no_inline_style_or_script(html)

    fragment = client.get(reverse("sweep_list"), {"status": "done"}, **HTMX).content.decode()
    assert fragment.lstrip().startswith('<section id="sweep-results"')
    assert "<html" not in fragment


def test_lead_sees_every_sweep_and_the_start_button(client, make_user, fr_sweep, ja_sweep):
    client.force_login(make_user("lea", role="lead"))
    html = client.get(reverse("sweep_list")).content.decode()
    assert f"#{fr_sweep.pk}<" in html and f"#{ja_sweep.pk}<" in html
    assert reverse("sweep_new") in html


def test_detail_full_page_fragment_and_forbidden(client, make_user, fr_sweep, ja_sweep):
    client.force_login(make_user("ana", languages=["fr"]))
    url = reverse("sweep_detail", args=[fr_sweep.pk])
    html = client.get(url).content.decode()
    assert "<progress" in html and 'value="100"' in html
    assert "<svg" in html and 'class="ratio__llm"' in html and 'class="ratio__unresolved"' in html
    assert "Run-to-run variance" in html and "rating" in html
    assert 'hx-trigger="every 2s"' not in html  # done: no more polling
    no_inline_style_or_script(html)

    fragment = client.get(url, **HTMX).content.decode()
    assert fragment.lstrip().startswith('<section id="sweep-progress"')
    assert "<html" not in fragment

    assert client.get(reverse("sweep_detail", args=[ja_sweep.pk])).status_code == 403


def test_a_running_sweep_polls_every_two_seconds(client, make_user, fr_sweep):
    Sweep.objects.filter(pk=fr_sweep.pk).update(status=Sweep.Status.RUNNING, verdicts_written=1)
    client.force_login(make_user("lea", role="lead"))
    fragment = client.get(reverse("sweep_detail", args=[fr_sweep.pk]), **HTMX).content.decode()
    assert 'hx-trigger="every 2s"' in fragment
    assert f'hx-get="{reverse("sweep_detail", args=[fr_sweep.pk])}"' in fragment


def start_form(dataset, judge, **fields):
    """The start form's fields: one judge version over `dataset`, once, in every language."""
    return {
        "dataset": dataset.pk,
        "judge_versions": [judge.pk],
        "repeats": 1,
        "variance_sample": 0.1,
        "qa_sample": 0,
        "language": "",
        **fields,
    }


def test_only_leads_start_sweeps(
    client, make_user, judge, scripted_llm, eager_celery, django_capture_on_commit_callbacks
):
    dataset = dataset_of_calls("new-calls", {"a": ("en", ["Hello [[r=3]]"])})
    client.force_login(make_user("ana", languages=["en"]))
    assert client.get(reverse("sweep_new")).status_code == 403
    assert client.post(reverse("sweep_new"), {}).status_code == 403

    client.force_login(make_user("lea", role="lead"))
    form = client.get(reverse("sweep_new")).content.decode()
    assert "conciseness@1.0" in form
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("sweep_new"), start_form(dataset, judge))
    sweep = Sweep.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("sweep_detail", args=[sweep.pk])
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.DONE and sweep.verdicts_written == 1
    assert sweep.created_by.username == "lea"


def test_the_start_form_reports_invalid_input(client, make_user, judge):
    dataset = dataset_of_calls("empty-ja", {"a": ("en", ["Hello"])})
    client.force_login(make_user("lea", role="lead"))
    response = client.post(reverse("sweep_new"), start_form(dataset, judge, language="ja"))
    assert response.status_code == 200
    assert "has no target" in response.content.decode()
    assert not Sweep.objects.exists()
