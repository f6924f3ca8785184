from django.conf import settings
from django.contrib.sessions.base_session import AbstractBaseSession
from django.db import models


class Role(models.TextChoices):
    REVIEWER = "reviewer", "Reviewer"
    LEAD = "lead", "Lead"
    ADMIN = "admin", "Admin"


class Profile(models.Model):
    """A person's role in Tribunal and the languages they review (BCP 47 codes).

    A reviewer assigned a base language ("fr") also covers its regional variants ("fr-CA").
    Leads and admins see every language.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.REVIEWER)
    languages = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return f"{self.user} ({self.role}: {', '.join(self.languages) or 'no languages'})"

    @property
    def sees_all_languages(self) -> bool:
        return self.role in (Role.LEAD, Role.ADMIN)


class ApiToken(models.Model):
    """A bearer token for CI and scripts. It acts as its user: same role, same languages.

    Only the sha256 of the token is stored; the token itself is shown once, when created.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=200)
    key_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12, help_text="The first characters, to recognise a token in lists.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # What the token may do (reviewapp.people.services.api_tokens.SCOPES) and, when not empty, the only
    # languages it may touch (within its user's own).
    scopes = models.JSONField(default=list, blank=True)
    languages = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}...)"


class UserSession(AbstractBaseSession):
    """Django's database session, with the id of the user it signs in beside its (signed) data, so that
    each request reads its session and its user in one statement (`reviewapp.people.sessions`). The
    column only finds the user; who is signed in is still what the session's data says, checked as
    Django checks it (the data's user id, its backend and its password hash). Deleting a user ends
    their sessions."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )

    class Meta(AbstractBaseSession.Meta):
        db_table = "reviewapp_session"

    @classmethod
    def get_session_store_class(cls):
        from reviewapp.people.sessions import SessionStore

        return SessionStore
