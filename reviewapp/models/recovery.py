"""Sweep recovery: a lease per running chunk, so a re-sent chunk never runs beside the one it replaces."""

from django.db import models


class SweepChunkLease(models.Model):
    """Held by the task running one chunk; renewed by its heartbeat, released when it ends.

    A killed worker cannot release its lease: it expires after TRIBUNAL_SWEEP_STALL_SECONDS, and
    the chunk re-sent by the reconcile task takes it over. A duplicate of a chunk whose lease is
    live (the original is still running) does nothing, so no LLM call is made twice at once.
    """

    sweep = models.ForeignKey("reviewapp.Sweep", on_delete=models.CASCADE, related_name="chunk_leases")
    judge_version_id = models.BigIntegerField()
    first_target = models.BigIntegerField()
    holder = models.CharField(max_length=64)
    expires_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["sweep", "judge_version_id", "first_target"], name="sweep_chunk_lease_unique"
            )
        ]

    def __str__(self) -> str:
        return f"sweep {self.sweep_id} chunk {self.judge_version_id}/{self.first_target} until {self.expires_at}"
