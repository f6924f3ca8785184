"""Server-side access checks: one helper per object, each raising PermissionDenied.

Languages are BCP 47 codes. A reviewer assigned "fr" covers "fr" and its regional variants
("fr-CA"); one assigned "fr-CA" covers only "fr-CA". Leads and admins see every language.
"""

from django.core.exceptions import PermissionDenied
from django.db.models import Q

from .models import Conversation, Dataset, Profile, Role


def profile_of(user) -> Profile | None:
    if not user.is_authenticated:
        return None
    try:
        return user.profile
    except Profile.DoesNotExist:
        return None


def sees_all_languages(user) -> bool:
    if user.is_superuser:
        return True
    profile = profile_of(user)
    return bool(profile and profile.sees_all_languages)


def is_lead(user) -> bool:
    profile = profile_of(user)
    return user.is_superuser or bool(profile and profile.role in (Role.LEAD, Role.ADMIN))


def assigned_languages(user) -> list[str]:
    profile = profile_of(user)
    return list(profile.languages) if profile else []


def language_allowed(user, language: str) -> bool:
    if sees_all_languages(user):
        return True
    language = language.lower()
    for assigned in assigned_languages(user):
        assigned = assigned.lower()
        if language == assigned or language.startswith(assigned + "-"):
            return True
    return False


def language_match_q(language: str, field: str = "language") -> Q:
    """`field` is `language` or one of its regional variants: "fr" matches "fr" and "fr-CA"."""
    return Q(**{f"{field}__iexact": language}) | Q(**{f"{field}__istartswith": language + "-"})


def language_q(user, field: str = "language") -> Q:
    """A filter on `field` (a BCP 47 language column) limited to what `user` may see."""
    if sees_all_languages(user):
        return Q()
    q = Q(pk__in=[])
    for assigned in assigned_languages(user):
        q |= language_match_q(assigned, field)
    return q


def check_conversation(user, conversation: Conversation) -> Conversation:
    if not language_allowed(user, conversation.language):
        raise PermissionDenied("This conversation's language is not assigned to you.")
    return conversation


def check_dataset(user, dataset: Dataset) -> Dataset:
    if sees_all_languages(user):
        return dataset
    if not dataset.conversations.filter(language_q(user)).exists():
        raise PermissionDenied("This dataset has no conversation in your languages.")
    return dataset
