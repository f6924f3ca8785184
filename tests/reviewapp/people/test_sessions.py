"""Sessions are Django's database sessions whose row keeps the id of the user they sign in
(reviewapp.people.sessions): a request reads its session and its user in one statement; who is signed
in is still what the session's data says, checked as Django checks it. A live session signs its user
in, an expired or unknown one signs nobody in and is never revived; an update is one statement."""

from datetime import timedelta

import pytest
from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.backends.base import UpdateError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from reviewapp.models import UserSession
from reviewapp.people.sessions import SessionStore
from tests.factories import PASSWORD
from tests.factories import user as make_user

pytestmark = pytest.mark.django_db


def _queue(client):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("queue_index"))
    return response, queries


def _user_statements(queries) -> list[str]:
    """The statements that read a user whole (their password hash with the rest)."""
    return [q["sql"] for q in queries.captured_queries if '"password"' in q["sql"]]


def test_a_live_session_signs_in_and_an_expired_or_unknown_one_does_not(client):
    ana = make_user("ana", languages=["fr"])
    client.force_login(ana)
    key = client.cookies["sessionid"].value
    assert client.get(reverse("queue_index")).status_code == 200
    row = UserSession.objects.get(session_key=key)
    assert row.user_id == ana.pk and row.get_decoded()[SESSION_KEY] == str(ana.pk)
    assert SessionStore(key).load()[SESSION_KEY] == str(ana.pk)

    UserSession.objects.filter(session_key=key).update(expire_date=timezone.now() - timedelta(seconds=1))
    store = SessionStore(key)
    assert store.load() == {} and store.session_key is None
    response = client.get(reverse("queue_index"))
    assert response.status_code == 302 and reverse("login") in response.url

    unknown = SessionStore("x" * 32)
    assert unknown.load() == {} and unknown.session_key is None


def test_a_request_reads_its_session_and_its_user_in_one_statement(client):
    ana = make_user("ana", languages=["fr"])
    client.force_login(ana)
    response, queries = _queue(client)
    assert response.status_code == 200 and response.context["user"] == ana
    statements = _user_statements(queries)
    assert len(statements) == 1, statements
    assert "reviewapp_session" in statements[0] and "reviewapp_profile" in statements[0]
    assert response.context["user"].profile.languages == ["fr"]


def test_a_row_without_the_user_id_still_signs_in_reading_the_user_apart(client):
    """A session saved before its row kept the user (moved by migration 0017 from data signed with
    another secret, say): the data signs the user in, their read is a statement of its own."""
    ana = make_user("ana", languages=["fr"])
    client.force_login(ana)
    UserSession.objects.update(user=None)
    response, queries = _queue(client)
    assert response.status_code == 200 and response.context["user"] == ana
    statements = _user_statements(queries)
    assert len(statements) == 2 and "reviewapp_session" not in statements[1]


def test_the_column_never_chooses_who_is_signed_in(client):
    """The row's user id only finds a user: a row naming someone else than its data does signs in
    the data's user (read apart), never the row's."""
    ana, lead = make_user("ana", languages=["fr"]), make_user("lea", role="lead")
    client.force_login(ana)
    UserSession.objects.update(user=lead)
    response, queries = _queue(client)
    assert response.status_code == 200 and response.context["user"] == ana
    assert len(_user_statements(queries)) == 2


def test_a_changed_password_or_a_deactivated_user_signs_the_session_out(client):
    """Django's checks still run on the user read beside the session: its password hash and is_active."""
    ana = make_user("ana", languages=["fr"])
    client.force_login(ana)
    ana.set_password(PASSWORD + "-new")
    ana.save()
    response = client.get(reverse("queue_index"))
    assert response.status_code == 302 and reverse("login") in response.url

    client.force_login(ana)
    ana.is_active = False
    ana.save()
    response = client.get(reverse("queue_index"))
    assert response.status_code == 302 and reverse("login") in response.url


def test_a_new_login_keeps_the_new_user_on_the_row_and_deleting_a_user_ends_their_sessions(client):
    ana, ben = make_user("ana", languages=["fr"]), make_user("ben", languages=["de"])
    assert client.post(reverse("login"), {"username": "ana", "password": PASSWORD}).status_code == 302
    assert list(UserSession.objects.values_list("user_id", flat=True)) == [ana.pk]
    assert client.post(reverse("login"), {"username": "ben", "password": PASSWORD}).status_code == 302
    assert list(UserSession.objects.values_list("user_id", flat=True)) == [ben.pk]
    response, _ = _queue(client)
    assert response.context["user"] == ben

    ben.delete()
    assert not UserSession.objects.exists()
    response = client.get(reverse("queue_index"))
    assert response.status_code == 302 and reverse("login") in response.url


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
    assert UserSession.objects.get(session_key=key).expire_date > timezone.now() + timedelta(days=1)
    UserSession.objects.filter(session_key=key).delete()
    store["queue_filters"] = {}
    with pytest.raises(UpdateError):
        store.save()
    assert not UserSession.objects.filter(session_key=key).exists()


@pytest.mark.django_db(transaction=True)
def test_migration_0017_moves_live_sessions_with_their_user_and_back():
    from django.contrib.sessions.backends.db import SessionStore as DjangoStore
    from django.contrib.sessions.models import Session

    ana = make_user("ana", languages=["fr"])
    executor = MigrationExecutor(connection)
    before, after = [("reviewapp", "0016_small_indexes_sqlite_reason_indexes")], [("reviewapp", "0017_user_sessions")]
    executor.migrate(before)
    try:
        live, anonymous = DjangoStore(), DjangoStore()
        live[SESSION_KEY] = str(ana.pk)
        live.create()
        anonymous["queue_filters"] = {"language": "de"}
        anonymous.create()
        Session.objects.create(
            session_key="e" * 32, session_data=live.encode({SESSION_KEY: str(ana.pk)}), expire_date=timezone.now()
        )  # expired: left behind

        executor = MigrationExecutor(connection)
        executor.migrate(after)
        moved = dict(UserSession.objects.values_list("session_key", "user_id"))
        assert moved == {live.session_key: ana.pk, anonymous.session_key: None}
        assert SessionStore(live.session_key).load()[SESSION_KEY] == str(ana.pk)

        executor = MigrationExecutor(connection)
        executor.migrate(before)
        assert set(Session.objects.values_list("session_key", flat=True)) == {live.session_key, anonymous.session_key}
    finally:
        MigrationExecutor(connection).migrate(executor.loader.graph.leaf_nodes())


def test_the_admin_lists_who_is_signed_in_without_ever_showing_a_session_key(client, django_user_model):
    """A session key is a bearer credential: the admin's list shows the user and the expiry, with no link
    to the session's page (whose address is the key) and no action checkbox (whose value is the key)."""
    ana = make_user("ana", languages=["fr"])
    reader = Client()
    reader.force_login(ana)
    root = django_user_model.objects.create_superuser("root", "root@example.com", PASSWORD)
    client.force_login(root)
    html = client.get(reverse("admin:reviewapp_usersession_changelist")).content.decode()
    keys = list(UserSession.objects.values_list("session_key", flat=True))
    assert len(keys) == 2 and "ana" in html and "root" in html
    assert not any(key in html for key in keys)
    assert client.get(reverse("admin:reviewapp_usersession_add")).status_code == 403
