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

from axes.backends import AxesStandaloneBackend
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend

from reviewapp.models import Profile
from reviewapp.people.sessions import NOT_READ, user_read_with_session
from reviewapp.rows import Columns, Rows, run_sql

_USER = Rows(Columns(get_user_model(), "u"), Columns(Profile, "p"))


class LoginThrottleBackend(AxesStandaloneBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


class ProfileModelBackend(ModelBackend):
    """Django's model backend, reading the signed-in user of each request with their profile."""

    def get_user(self, user_id):
        user = user_read_with_session(user_id)  # read beside the request's session row, or not read yet
        if user is NOT_READ:
            user = signed_in_user(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None


def signed_in_user(user_id):
    """The user `user_id` with their profile (None when they have none), or None: one statement."""
    users, profiles = _USER.parts
    joined = f"{users.table()} LEFT OUTER JOIN {profiles.table()} ON p.user_id = u.id"
    sql = f"SELECT {_USER.select()} FROM {joined} WHERE u.id = %s"  # noqa: S608 - names only; the id is a parameter
    rows = run_sql(sql, [get_user_model()._meta.pk.to_python(user_id)])
    if not rows:
        return None
    user, profile = _USER.instances(rows[0])
    get_user_model()._meta.get_field("profile").set_cached_value(user, profile)
    if profile is not None:
        profile.user = user
    return user
