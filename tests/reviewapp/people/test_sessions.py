"""Sessions are Django's database sessions (reviewapp.people.sessions only writes their read once, and
an update as one statement): a live session signs its user in, an expired or unknown one signs nobody in
and is never revived."""

from datetime import timedelta

import pytest
from django.contrib.sessions.backends.base import UpdateError
from django.contrib.sessions.models import Session
from django.urls import reverse
from django.utils import timezone

from reviewapp.people.sessions import SessionStore
from tests.factories import user as make_user

pytestmark = pytest.mark.django_db


def test_a_live_session_signs_in_and_an_expired_or_unknown_one_does_not(client):
    client.force_login(make_user("ana", languages=["fr"]))
    key = client.cookies["sessionid"].value
    assert client.get(reverse("queue_index")).status_code == 200
    assert SessionStore(key).load()["_auth_user_id"] == str(Session.objects.get().get_decoded()["_auth_user_id"])

    Session.objects.filter(session_key=key).update(expire_date=timezone.now() - timedelta(seconds=1))
    store = SessionStore(key)
    assert store.load() == {} and store.session_key is None
    response = client.get(reverse("queue_index"))
    assert response.status_code == 302 and reverse("login") in response.url

    unknown = SessionStore("x" * 32)
    assert unknown.load() == {} and unknown.session_key is None


@pytest.mark.django_db(transaction=True)  # as a request saves it: outside any transaction
def test_a_changed_session_is_saved_in_one_update_and_a_vanished_one_is_not_recreated(django_assert_num_queries):
    store = SessionStore()
    store["queue_filters"] = {"language": "fr"}
    store.create()  # a new session: Django's own insert
    key = store.session_key
    store["queue_filters"] = {"language": "de"}

    with django_assert_num_queries(1):  # the UPDATE alone: no savepoint or transaction around it
        store.save()

    assert SessionStore(key).load() == {"queue_filters": {"language": "de"}}
    assert Session.objects.get(session_key=key).expire_date > timezone.now() + timedelta(days=1)
    Session.objects.filter(session_key=key).delete()
    store["queue_filters"] = {}
    with pytest.raises(UpdateError):
        store.save()
    assert not Session.objects.filter(session_key=key).exists()
