"""Login throttling: django-axes in front of Django's model backend.

Axes counts failed web logins and refuses a locked-out account until its cool-off has passed
(settings: TRIBUNAL_LOGIN_FAILURE_LIMIT, TRIBUNAL_LOGIN_COOLOFF_MINUTES). It needs the request to
know where an attempt came from; calls without one (a management command, a shell, the test
client's `login()`) never come from the login form, so they are left to the model backend
(`ProfileModelBackend`).

The signed-in user of each request is read with their profile in the same query: every page asks
`access` about the profile's role and languages.
"""

from axes.backends import AxesStandaloneBackend
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend


class LoginThrottleBackend(AxesStandaloneBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


class ProfileModelBackend(ModelBackend):
    """Django's model backend, reading the signed-in user of each request with their profile."""

    def get_user(self, user_id):
        user = get_user_model()._default_manager.select_related("profile").filter(pk=user_id).first()
        return user if user is not None and self.user_can_authenticate(user) else None
