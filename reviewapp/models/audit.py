from django.conf import settings
from django.db import models

from reviewapp.models import choices


class AuditEvent(models.Model):
    """Who changed what, before and after."""

    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    action = models.CharField(max_length=100)
    object_type = models.CharField(max_length=100)
    object_id = models.CharField(max_length=64)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["object_type", "object_id", "created_at"], name="audit_object")]

    def __str__(self) -> str:
        return f"{self.action} {self.object_type}:{self.object_id}"


class ExportSnapshot(models.Model):
    """A versioned, immutable validation dataset file with its provenance."""

    Status = choices.ExportSnapshotStatus

    name = models.CharField(max_length=200)
    version = models.PositiveIntegerField()
    judge = models.ForeignKey("reviewapp.Judge", null=True, blank=True, on_delete=models.SET_NULL)
    format = models.CharField(max_length=16)
    filters = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    progress = models.PositiveIntegerField(default=0)
    row_count = models.PositiveIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    file_path = models.CharField(max_length=500, blank=True)
    datasheet = models.JSONField(default=dict, blank=True)
    code_version = models.CharField(max_length=64, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["name", "version"], name="snapshot_unique_version")]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"
