"""Login throttling: django-axes in front of Django's model backend.

Axes counts failed web logins and refuses a locked-out account until its cool-off has passed
(settings: TRIBUNAL_LOGIN_FAILURE_LIMIT, TRIBUNAL_LOGIN_COOLOFF_MINUTES). It needs the request to
know where an attempt came from; calls without one (a management command, a shell, the test
client's `login()`) never come from the login form, so they are left to the model backend
(`ProfileModelBackend`).

The signed-in user of each request is read with their profile in the same query: every page asks
`access` about the profile's role and languages. A request's session row is read with its user and
profile (`reviewapp.people.sessions`), and the backend takes that user when it is the one the session's
data names; otherwise (a session saved before its row kept the user, a call outside a request) it
reads them in one statement written once (`reviewapp.rows`): building it through the ORM on every
request cost more than running it.
"""

from contextlib import contextmanager
from contextvars import ContextVar

from axes.backends import AxesStandaloneBackend
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend

from reviewapp.models import Profile
from reviewapp.rows import Columns, Rows, run_sql

# The signed-in user with their profile, as every reader of them selects and joins them.
USER = Rows(Columns(get_user_model(), "u"), Columns(Profile, "p"))

NOT_READ = object()  # a session whose row was not read with its user
# The request's session while Django's `get_user` finds its user (`finding_user_of`), for the backend.
_FINDING = ContextVar("tribunal_session_finding_user", default=None)


class LoginThrottleBackend(AxesStandaloneBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


class ProfileModelBackend(ModelBackend):
    """Django's model backend, reading the signed-in user of each request with their profile."""

    def get_user(self, user_id):
        user = _read_with_session(user_id)
        if user is NOT_READ:
            user = signed_in_user(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None


@contextmanager
def finding_user_of(session):
    """While Django's `get_user` finds the user of `session` (the request's): the backend may take the
    user read beside the session's row (`sessions.SessionStore.user_read_beside`)."""
    token = _FINDING.set(session)
    try:
        yield
    finally:
        _FINDING.reset(token)


def _read_with_session(user_id):
    """The user `user_id` as read with the request's session row (None when that row named a user who is
    gone), or NOT_READ when it was not read with it."""
    read_beside = getattr(_FINDING.get(), "user_read_beside", None)
    return NOT_READ if read_beside is None else read_beside(user_id)


def user_from_row(columns):
    """The user and profile of `USER`'s columns as one user, their profile in its cache (None when they
    have none); None when the columns are a left join that found no user."""
    user, profile = USER.instances(columns)
    if user is None:
        return None
    get_user_model()._meta.get_field("profile").set_cached_value(user, profile)
    if profile is not None:
        profile.user = user
    return user


def signed_in_user(user_id):
    """The user `user_id` with their profile (None when they have none), or None: one statement."""
    users, profiles = USER.parts
    joined = f"{users.table()} LEFT OUTER JOIN {profiles.table()} ON p.user_id = u.id"
    sql = f"SELECT {USER.select()} FROM {joined} WHERE u.id = %s"  # noqa: S608 - names only; the id is a parameter
    rows = run_sql(sql, [get_user_model()._meta.pk.to_python(user_id)])
    return user_from_row(rows[0]) if rows else None
