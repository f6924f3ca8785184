"""People: an admin sets each person's role and the languages they review."""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from reviewapp import access
from reviewapp.audit import audit_record
from reviewapp.corpus.importers.limits import language_problem
from reviewapp.models import Profile, Role
from scoring.errors import TribunalError


class PeopleError(TribunalError):
    """An invalid change to a person's role or languages."""


def languages_clean(codes: Iterable[str]) -> list[str]:
    """Trim, validate and de-duplicate BCP 47 codes, keeping their order."""
    cleaned: list[str] = []
    for code in codes:
        code = code.strip()
        if not code:
            continue
        if language_problem(code):  # the rule the importers apply to conversation languages
            raise PeopleError(f"{code!r} is not a BCP 47 language code (en, fr, fr-CA, ja ...).")
        if code.lower() not in (c.lower() for c in cleaned):
            cleaned.append(code)
    return cleaned


@transaction.atomic
def profile_update(*, actor, user, role: str, languages: Iterable[str], is_active: bool | None = None) -> Profile:
    """Set `user`'s role and languages (and whether they may log in); audited with before and after."""
    if role not in Role.values:
        raise PeopleError(f"Unknown role {role!r}.")
    languages = languages_clean(languages)
    if actor is not None and actor.pk == user.pk and role != Role.ADMIN:
        raise PeopleError("You cannot take the admin role from yourself; ask another admin.")
    if actor is not None and actor.pk == user.pk and is_active is False:
        raise PeopleError("You cannot deactivate your own account.")
    profile, _ = Profile.objects.get_or_create(user=user)
    before = {"role": profile.role, "languages": list(profile.languages), "is_active": user.is_active}
    profile.role, profile.languages = role, languages
    profile.save(update_fields=["role", "languages"])
    if is_active is not None and is_active != user.is_active:
        user.is_active = is_active
        user.save(update_fields=["is_active"])
    after = {"role": profile.role, "languages": languages, "is_active": user.is_active}
    audit_record(actor=actor, action="profile.update", obj=profile, before=before, after=after)
    return profile


USERNAME = re.compile(r"^[\w.@+-]{1,150}$")


@transaction.atomic
def person_create(
    *, actor, username: str, password: str, role: str, languages: Iterable[str], email: str = ""
) -> Profile:
    """An admin adds a person with a role and the languages they review; audited (never the password)."""
    if not access.is_admin(actor):
        raise PeopleError("Only admins add people.")
    username = username.strip()
    if not USERNAME.match(username):
        raise PeopleError("A username is 1 to 150 letters, digits and @ . + - _ characters.")
    if role not in Role.values:
        raise PeopleError(f"Unknown role {role!r}.")
    codes = languages_clean(languages)
    if role == Role.REVIEWER and not codes:
        raise PeopleError("A reviewer needs at least one language to review.")
    users = get_user_model()
    if users.objects.filter(username__iexact=username).exists():
        raise PeopleError(f"Someone is called {username!r} already.")
    candidate = users(username=username, email=email.strip())
    try:
        validate_password(password, user=candidate)
    except ValidationError as exc:
        raise PeopleError(" ".join(exc.messages)) from None
    user = users.objects.create_user(username=username, email=email.strip(), password=password)
    profile = Profile.objects.create(user=user, role=role, languages=codes)
    audit_record(
        actor=actor,
        action="person.create",
        obj=profile,
        before=None,
        after={"username": username, "role": role, "languages": codes, "email": email.strip()},
    )
    return profile
