"""Django's database sessions, read with a statement written once.

Every signed-in request reads its session row; building that `Session.objects.get(...)` through the ORM
each time cost more than running it. Writing, expiry and everything else are Django's own
(`SESSION_ENGINE = "reviewapp.people.sessions"`).
"""

from django.contrib.sessions.backends import db
from django.db import connection
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
