"""Tier-1 history: every version of a signature as it was, with its measure on gold.

A sweep records the versions it used (`SignatureVersion.sweeps`), so its tier-1 verdicts can be
traced to the exact rule that gave them even after the signature changed.
"""

from django.conf import settings
from django.db import models

from reviewapp.models import choices


class SignatureVersion(models.Model):
    Change = choices.SignatureVersionChange

    signature = models.ForeignKey("reviewapp.Signature", on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    change = models.CharField(max_length=16, choices=Change.choices)
    # The rule as it was: kind, pattern, negation_guards, label, rating, passed, active, evidence ids.
    rule = models.JSONField(default=dict)
    # Its measure on gold when this version was made: compared, agreeing, precision, interval, turns.
    gold_check = models.JSONField(default=dict, blank=True)
    note = models.TextField(blank=True)
    changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    sweeps = models.ManyToManyField("reviewapp.Sweep", blank=True, related_name="signature_versions")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["signature", "version"], name="signature_version_unique")]
        ordering = ["signature_id", "version"]

    def __str__(self) -> str:
        return f"signature {self.signature_id} v{self.version} ({self.change})"
