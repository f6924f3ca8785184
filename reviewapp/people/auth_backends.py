"""Login throttling: django-axes in front of Django's model backend.

Axes counts failed web logins and refuses a locked-out account until its cool-off has passed
(settings: TRIBUNAL_LOGIN_FAILURE_LIMIT, TRIBUNAL_LOGIN_COOLOFF_MINUTES). It needs the request to
know where an attempt came from; calls without one (a management command, a shell, the test
client's `login()`) never come from the login form, so they are left to the model backend.
"""

from axes.backends import AxesStandaloneBackend


class LoginThrottleBackend(AxesStandaloneBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
