"""Django's database sessions, read with a statement written once, and changed with one UPDATE.

Every signed-in request reads its session row; building that `Session.objects.get(...)` through the ORM
each time cost more than running it. A changed session is saved by one UPDATE on its own, without the
transaction (BEGIN, COMMIT) Django opens around it: one statement is atomic by itself. Creating a session,
expiry and everything else are Django's own (`SESSION_ENGINE = "reviewapp.people.sessions"`).
"""

from django.contrib.sessions.backends import db
from django.contrib.sessions.backends.base import UpdateError
from django.db import DatabaseError, connection, router
from django.utils import timezone

from reviewapp.rows import run_sql


class SessionStore(db.SessionStore):
    def _get_session_from_db(self):
        """The unexpired session row of this key (only its data is read), or None, as Django's own read."""
        table = connection.ops.quote_name(self.model._meta.db_table)
        # The table name only; the key and the time are parameters.
        sql = f"SELECT session_data FROM {table} WHERE session_key = %s AND expire_date > %s"  # noqa: S608
        now = self.model._meta.get_field("expire_date").get_db_prep_value(timezone.now(), connection)
        rows = run_sql(sql, [self.session_key, now])
        if not rows:
            self._session_key = None
            return None
        return self.model(session_key=self.session_key, session_data=rows[0][0])

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
