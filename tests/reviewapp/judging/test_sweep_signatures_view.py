"""The sweep page lists the signature versions the sweep used, with the turns each resolved."""

import pytest
from django.urls import reverse

from reviewapp.judging.selectors.signatures import sweep_signature_versions
from reviewapp.judging.services.signatures import signature_create, signature_update
from reviewapp.models import Signature
from tests.factories import HTMX, dataset_of_calls, store_judge

pytestmark = pytest.mark.django_db


@pytest.fixture
def swept(llm_off, run_sweep):
    judge = store_judge("conciseness")
    dataset = dataset_of_calls(
        "calls",
        {"a": ("en", ["Have a good day.", "One moment please.", "Have a good day.", "Your flight is at nine."])},
    )
    turns = list(dataset.conversations.get().turns.filter(role="agent").order_by("position"))

    def make(pattern, evidence, intent):
        return signature_create(
            judge=judge.judge,
            language="en",
            intent=intent,
            kind="substring",
            pattern=pattern,
            evidence=[evidence],
            rating=3.0,
        )

    closing = make("have a good day", turns[0], "closing")
    hold = make("one moment", turns[1], "hold")
    signature_update(signature=hold, label="concise")  # v2
    sweep = run_sweep(dataset=dataset, judge_versions=[judge], qa_sample=0)
    return sweep, closing, hold


def test_the_selector_reads_versions_and_counts_in_two_queries(swept, django_assert_num_queries):
    sweep, closing, hold = swept
    with django_assert_num_queries(2):
        versions = sweep_signature_versions(sweep=sweep)
        rows = [(v.signature_id, v.version, v.resolved, v.signature.judge.slug) for v in versions]
    assert sorted(rows) == sorted([(closing.pk, 1, 2, "conciseness"), (hold.pk, 2, 1, "conciseness")])


def test_the_sweep_page_shows_them_full_page_only(client, make_user, swept):
    sweep, closing, _ = swept
    signature_update(signature=Signature.objects.get(pk=closing.pk), label="concise")  # after the sweep: v2
    client.force_login(make_user("lea", role="lead"))
    html = client.get(reverse("sweep_detail", args=[sweep.pk])).content.decode()
    assert 'id="sweep-signatures"' in html
    assert reverse("signature_detail", args=[closing.pk]) in html
    assert "(now v2)" in html  # the sweep used v1 of the closing signature
    fragment = client.get(reverse("sweep_detail", args=[sweep.pk]), **HTMX).content.decode()
    assert 'id="sweep-signatures"' not in fragment  # the polled progress fragment stays small
    client.force_login(make_user("ana", languages=["ja"]))
    assert client.get(reverse("sweep_detail", args=[sweep.pk])).status_code == 403
