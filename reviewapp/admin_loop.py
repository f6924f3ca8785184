"""Admin for edge cases, their tags, version provenance and proofs (registered from admin.py)."""

from django.contrib import admin

from reviewapp import models


@admin.register(models.EdgeCase)
class EdgeCaseAdmin(admin.ModelAdmin):
    list_display = ("judge", "position", "case", "pattern")
    list_filter = ("judge",)
    search_fields = ("case", "coverage", "pattern")


@admin.register(models.EdgeCaseTag)
class EdgeCaseTagAdmin(admin.ModelAdmin):
    list_display = ("edge_case", "conversation", "source", "added_by", "created_at")
    list_filter = ("source",)
    raw_id_fields = ("conversation",)


@admin.register(models.VersionProvenance)
class VersionProvenanceAdmin(admin.ModelAdmin):
    list_display = ("version", "parent", "approved_by", "created_at")
    search_fields = ("version__version", "parent__version", "note")
    raw_id_fields = ("items", "comments")


@admin.register(models.ProofRun)
class ProofRunAdmin(admin.ModelAdmin):
    list_display = ("version", "parent", "started_by", "created_at")
    search_fields = ("version__version", "parent__version")
    raw_id_fields = ("main_sweeps", "rerun_sweeps")
