"""Database sessions that read their signed-in user in the same statement, and change with one UPDATE.

Every signed-in request reads its session row and then its user with their profile. The session row
(`UserSession`) keeps the id of the user its data signs in, so one statement reads the session's data
and, joined on that id, the user and their profile (`_get_session_from_db`). Django's `get_user` then
runs as ever (the user id and backend from the session's data, `is_active`, the password hash), and the
backend takes the user read beside the session when it is the one the data names
(`auth_backends.ProfileModelBackend`, through `user_read_beside`; the user and profile are read and
built as `auth_backends` reads them apart); otherwise it reads the user itself.

The statement is written once: building `Session.objects.get(...)` through the ORM on every request
cost more than running it. A changed session is saved by one UPDATE on its own, without the
transaction (BEGIN, COMMIT) Django opens around it: one statement is atomic by itself. Creating a
session, expiry and everything else are Django's own (`SESSION_ENGINE = "reviewapp.people.sessions"`).
"""

from __future__ import annotations

from django.contrib.auth import SESSION_KEY, get_user_model
from django.contrib.sessions.backends import db
from django.contrib.sessions.backends.base import UpdateError
from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, router
from django.utils import timezone

from reviewapp.people.auth_backends import NOT_READ, USER, user_from_row
from reviewapp.rows import run_sql


def _signed_in_id(data: dict) -> int | None:
    """The user id a session's data signs in, as the column holds it (None when it signs in nobody,
    or names an id that is not one of this user model's)."""
    value = data.get(SESSION_KEY)
    if value is None:
        return None
    try:
        return get_user_model()._meta.pk.to_python(value)
    except ValidationError:  # an id this model does not take signs in nobody
        return None


class SessionStore(db.SessionStore):
    _user_read: tuple[int, object] | None = None  # (the row's user id, the user or None) once read

    @classmethod
    def get_model_class(cls):
        from reviewapp.models import UserSession

        return UserSession

    def create_model_instance(self, data):
        instance = super().create_model_instance(data)
        instance.user_id = _signed_in_id(data)
        return instance

    def _get_session_from_db(self):
        """The unexpired session row of this key (its data), with the user its row names and their
        profile, read in one statement; or None, as Django's own read."""
        users, profiles = USER.parts
        session = connection.ops.quote_name(self.model._meta.db_table)
        # Names only; the key and the time are parameters.
        sql = (
            f"SELECT s.session_data, s.user_id, {USER.select()} FROM {session} s"  # noqa: S608
            f" LEFT OUTER JOIN {users.table()} ON u.id = s.user_id"
            f" LEFT OUTER JOIN {profiles.table()} ON p.user_id = u.id"
            " WHERE s.session_key = %s AND s.expire_date > %s"
        )
        now = self.model._meta.get_field("expire_date").get_db_prep_value(timezone.now(), connection)
        rows = run_sql(sql, [self.session_key, now])
        if not rows:
            self._session_key = None
            return None
        data, user_id, *columns = rows[0]
        if user_id is not None:
            self._user_read = (user_id, user_from_row(columns))
        return self.model(session_key=self.session_key, session_data=data)

    def user_read_beside(self, user_id):
        """The user read with this session's row when it is `user_id` (the one the session's data
        names), else NOT_READ: a session saved before its row kept the id, or whose data changed
        since, has its user read on its own."""
        if self._user_read is None:
            return NOT_READ
        read_id, user = self._user_read
        wanted = _signed_in_id({SESSION_KEY: user_id})
        return user if wanted is not None and wanted == read_id else NOT_READ

    def save(self, must_create=False):
        """Django's save; outside a transaction, an existing session's as one UPDATE (UpdateError when its
        row is gone, as Django's). Inside one, Django's savepoint keeps a failed save from ending it."""
        if must_create or self.session_key is None or connection.in_atomic_block:
            return super().save(must_create=must_create)
        obj = self.create_model_instance(self._get_session())
        try:
            obj.save(force_update=True, using=router.db_for_write(self.model, instance=obj))
        except DatabaseError:
            raise UpdateError from None
