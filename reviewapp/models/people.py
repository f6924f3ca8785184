from django.conf import settings
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
