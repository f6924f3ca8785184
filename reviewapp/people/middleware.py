"""Django's authentication middleware, finding each request's user with the one read beside its session.

`request.user` is Django's own lazy `auth.get_user(request)`: the user id and backend from the session's
data, `is_active`, the password hash checked (and a session signed with an old secret rotated or
flushed). The only difference: while it runs, the backend may take the user the session's row was read
with (`reviewapp.people.sessions`), which spares every signed-in request a statement.
"""

from django.contrib import auth
from django.contrib.auth import middleware
from django.utils.functional import SimpleLazyObject

from reviewapp.people.auth_backends import finding_user_of


def _user(request):
    if not hasattr(request, "_cached_user"):
        with finding_user_of(request.session):
            request._cached_user = auth.get_user(request)
    return request._cached_user


class AuthenticationMiddleware(middleware.AuthenticationMiddleware):
    def process_request(self, request):
        super().process_request(request)
        request.user = SimpleLazyObject(lambda: _user(request))
