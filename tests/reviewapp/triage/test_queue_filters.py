"""The queue's filters: one form parses query strings and the session alike; junk never breaks the loop.

Property-based: hypothesis feeds real values, numbers, junk text, NUL bytes and huge integers to every
filter, through the query string and straight into the session (where a dataset used to be stored as
an int and broke every submit, skip and "next" with a 500), and checks that the queue page, "start
reviewing", submit, skip and next all still answer.
"""

from __future__ import annotations

import pytest
from django.db import transaction
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reviewapp.models import Review, ReviewItem, ReviewSkip, Role
from reviewapp.triage.forms.queue import QueueFilterForm
from reviewapp.triage.selectors.queue_filters import QueueFilters
from reviewapp.triage.services import claims
from reviewapp.triage.views.queue import SESSION_FILTERS
from tests.factories import HTMX, dataset, make_item

pytestmark = pytest.mark.django_db

JUNK = st.one_of(
    st.text(max_size=60),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from(["", " ", "\x00", "1\x00", "9" * 40, "-1", "0", "1.5", "fr\u202e", "__proto__", "' OR 1=1 --"]),
    st.none(),
    st.booleans(),
)


def filter_values(real: dict) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries(
        {},
        optional={name: st.one_of(st.sampled_from(values), JUNK) for name, values in real.items()},
    )


def test_a_dataset_filter_kept_in_the_session_as_a_number_no_longer_breaks_submit_skip_or_next(client, make_user):
    data = dataset("calls")
    first, second, _third = (make_item("fr", on=data, priority=p) for p in (300, 200, 100))
    ana = make_user("ana", languages=["fr"])
    client.force_login(ana)

    started = client.post(reverse("queue_next"), {"dataset": str(data.pk)})
    assert started.status_code == 302 and started.url == reverse("review_item", args=[first.pk])
    session = client.session
    session[SESSION_FILTERS] = {"dataset": data.pk}  # what the session held before: an int
    session.save()

    submitted = client.post(reverse("review_item", args=[first.pk]), {"rating": "2"})
    assert submitted.status_code == 302 and submitted.url == reverse("review_item", args=[second.pk])
    skipped = client.post(reverse("review_skip", args=[second.pk]), {"reason": "pas mon dialecte"})
    assert skipped.status_code == 302
    assert client.post(reverse("review_next")).status_code == 302
    assert Review.objects.filter(item=first, reviewer=ana).exists()
    assert ReviewSkip.objects.filter(item=second, reviewer=ana).exists()


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"dataset": 7}, QueueFilters(dataset=7)),
        ({"dataset": "7"}, QueueFilters(dataset=7)),
        ({"dataset": "0"}, QueueFilters()),
        ({"dataset": str(2**40)}, QueueFilters()),
        ({"dataset": "x"}, QueueFilters()),
        ({"language": "fr-CA", "status": "open"}, QueueFilters(language="fr-CA", status="open")),
        ({"language": '"><svg onload=1>'}, QueueFilters()),
        ({"judge": "conci\x00seness"}, QueueFilters()),
        ({"reason": "qa_sample", "judge": "conciseness"}, QueueFilters(reason="qa_sample", judge="conciseness")),
        ({"reason": "nonsense", "status": "deleted"}, QueueFilters()),
    ],
)
def test_filters_keep_what_parses_and_drop_what_does_not(params, expected):
    assert QueueFilters.from_query(params) == expected


def test_the_form_says_which_filter_it_ignored():
    form = QueueFilterForm.from_params({"dataset": "abc", "language": "fr"})
    assert [line.split(":")[0] for line in form.ignored()] == ["dataset"]
    assert QueueFilters.from_form(form) == QueueFilters(language="fr")


@given(
    st.builds(
        QueueFilters,
        language=st.sampled_from(["", "fr", "fr-CA", "ja"]),
        judge=st.sampled_from(["", "conciseness", "speak_ability-2"]),
        reason=st.sampled_from(["", *ReviewItem.Reason.values]),
        dataset=st.one_of(st.none(), st.integers(min_value=1, max_value=2**31 - 1)),
        status=st.sampled_from(["", *ReviewItem.Status.values]),
    )
)
def test_valid_filters_survive_the_round_trip_through_query_and_session(filters):
    assert QueueFilters.from_query(filters.as_query()) == filters
    assert QueueFilters.from_query({k: str(v) for k, v in filters.as_query().items()}) == filters


def test_submit_skip_and_next_work_after_any_filter(client, make_user):
    data, other = dataset("calls"), dataset("other")
    for priority in range(12):
        make_item(
            "fr" if priority % 3 else "fr-CA",
            on=data if priority % 2 else other,
            priority=priority,
            reasons=["qa_sample"] if priority % 4 == 0 else ["unresolved"],
        )
    ana = make_user("ana", languages=["fr"])
    make_user("lea", role=Role.LEAD)
    client.force_login(ana)
    real = {
        "dataset": [data.pk, str(data.pk), other.pk, ""],
        "language": ["fr", "fr-CA", "FR", "ja", ""],
        "judge": ["conciseness", "nope", ""],
        "reason": ["unresolved", "qa_sample", ""],
        "status": ["open", "in_review", "closed", ""],
    }

    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(query=filter_values(real), stored=filter_values(real))
    def check(query, stored):
        with transaction.atomic():
            as_text = {k: str(v) for k, v in query.items() if v is not None}
            assert client.get(reverse("queue_index"), as_text).status_code == 200
            assert client.get(reverse("queue_index"), as_text, **HTMX).status_code == 200
            started = client.post(reverse("queue_next"), as_text)
            assert started.status_code == 302
            session = client.session
            session[SESSION_FILTERS] = stored  # whatever an older release (or a hand) left there
            session.save()
            item = claims.item_claim(user=ana)
            assert item is not None
            submitted = client.post(reverse("review_item", args=[item.pk]), {"rating": "2"})
            assert submitted.status_code == 302, submitted.content[:300]
            nxt = claims.item_claim(user=ana)
            if nxt is not None:
                assert client.post(reverse("review_skip", args=[nxt.pk]), {"reason": "unsure"}).status_code == 302
            assert client.post(reverse("review_next")).status_code == 302
            transaction.set_rollback(True)

    check()
