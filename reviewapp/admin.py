from django.contrib import admin

from reviewapp import models
from reviewapp.judging.forms.signatures import SignatureAdminForm


@admin.register(models.Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ("user", "role", "languages")
    list_filter = ("role",)
    search_fields = ("user__username", "user__email")


@admin.register(models.Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "source", "reviews_required", "blind_review", "created_at")
    list_filter = ("kind", "blind_review")
    search_fields = ("name", "source", "description")


@admin.register(models.Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("external_id", "dataset", "language", "created_at")
    list_filter = ("language", "dataset")
    search_fields = ("external_id",)
    list_select_related = ("dataset",)
    raw_id_fields = ("dataset",)


@admin.register(models.Turn)
class TurnAdmin(admin.ModelAdmin):
    list_display = ("conversation", "position", "role", "text")
    list_filter = ("role", "conversation__language")
    search_fields = ("text", "intended_text", "conversation__external_id")
    raw_id_fields = ("conversation",)


@admin.register(models.Judge)
class JudgeAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "level", "scale", "scale_min", "scale_max")
    list_filter = ("level", "scale")
    search_fields = ("slug", "name")


@admin.register(models.JudgeVersion)
class JudgeVersionAdmin(admin.ModelAdmin):
    list_display = ("judge", "version", "spec_hash", "source", "created_at")
    list_filter = ("judge",)
    search_fields = ("version", "spec_hash", "source")
    readonly_fields = ("spec", "spec_hash")


@admin.register(models.Signature)
class SignatureAdmin(admin.ModelAdmin):
    form = SignatureAdminForm
    list_display = ("judge", "language", "intent", "kind", "pattern", "label", "active")
    list_filter = ("judge", "language", "kind", "active")
    search_fields = ("pattern", "intent", "label")
    raw_id_fields = ("evidence",)

    # Read-only here: signatures change on /signatures/, where each change is measured on gold,
    # versioned and audited; an admin form would bypass all three.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(models.SignatureVersion)
class SignatureVersionAdmin(admin.ModelAdmin):
    """The history of each signature, as recorded by the signature service: read-only."""

    list_display = ("signature", "version", "change", "changed_by", "created_at")
    list_filter = ("change",)
    search_fields = ("signature__pattern", "signature__intent", "note")
    raw_id_fields = ("signature", "sweeps")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(models.SweepChunkLease)
class SweepChunkLeaseAdmin(admin.ModelAdmin):
    list_display = ("sweep", "judge_version_id", "first_target", "holder", "expires_at")
    list_filter = ("expires_at",)
    search_fields = ("holder",)
    raw_id_fields = ("sweep",)


@admin.register(models.Sweep)
class SweepAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "kind",
        "dataset",
        "status",
        "verdicts_written",
        "tier1_resolved",
        "escalated",
        "unresolved",
        "failed",
        "created_at",
    )
    list_filter = ("kind", "status")
    search_fields = ("name",)


@admin.register(models.PromptText)
class PromptTextAdmin(admin.ModelAdmin):
    list_display = ("sha256",)
    search_fields = ("sha256", "text")


@admin.register(models.JudgeCall)
class JudgeCallAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "judge_version",
        "model",
        "latency_ms",
        "prompt_tokens",
        "completion_tokens",
        "error",
        "created_at",
    )
    list_filter = ("model",)
    search_fields = ("raw_response", "error")
    raw_id_fields = ("judge_version", "sweep", "system_prompt", "user_prompt")


@admin.register(models.Verdict)
class VerdictAdmin(admin.ModelAdmin):
    list_display = ("id", "judge_version", "tier", "status", "rating", "label", "passed", "run_index")
    list_filter = ("tier", "status", "judge_version__judge")
    search_fields = ("explanation", "raw_text", "label")
    raw_id_fields = ("sweep", "judge_version", "conversation", "turn", "signature", "call")


@admin.register(models.Category)
class CategoryAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "active")
    list_filter = ("active",)
    search_fields = ("slug", "name", "description")


@admin.register(models.GoldLabel)
class GoldLabelAdmin(admin.ModelAdmin):
    list_display = ("id", "judge", "source", "rating", "label", "passed", "excluded")
    list_filter = ("judge", "source", "excluded")
    search_fields = ("label", "conversation__external_id")
    raw_id_fields = ("conversation", "turn")


@admin.register(models.ReviewItem)
class ReviewItemAdmin(admin.ModelAdmin):
    list_display = ("id", "judge", "language", "status", "priority", "claimed_by", "lease_expires_at")
    list_filter = ("status", "language", "judge")
    search_fields = ("conversation__external_id",)
    raw_id_fields = ("conversation", "turn", "dataset", "claimed_by")


@admin.register(models.QueueCount)
class QueueCountAdmin(admin.ModelAdmin):
    """Read only: database triggers keep these counts (the initial migration, 0001_squashed_0010_queue_counts)."""

    list_display = ("language", "judge", "dataset", "status", "reasons", "n")
    list_filter = ("status", "language", "judge")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(models.Review)
class ReviewAdmin(admin.ModelAdmin):
    list_display = ("id", "item", "reviewer", "rating", "label", "created_at")
    list_filter = ("reviewer",)
    search_fields = ("comment",)
    raw_id_fields = ("item",)


@admin.register(models.Comment)
class CommentAdmin(admin.ModelAdmin):
    list_display = ("id", "turn", "author", "flagged_for_lead", "created_at")
    list_filter = ("flagged_for_lead", "categories")
    search_fields = ("body",)
    raw_id_fields = ("turn", "parent")


@admin.register(models.Adjudication)
class AdjudicationAdmin(admin.ModelAdmin):
    list_display = ("item", "lead", "rating", "label", "created_at")
    search_fields = ("rationale",)
    raw_id_fields = ("item",)


@admin.register(models.AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("created_at", "actor", "action", "object_type", "object_id")
    list_filter = ("action", "object_type")
    search_fields = ("object_id",)


@admin.register(models.ExportSnapshot)
class ExportSnapshotAdmin(admin.ModelAdmin):
    list_display = ("name", "version", "format", "status", "row_count", "sha256", "created_at")
    list_filter = ("format", "status")
    search_fields = ("name", "sha256")


@admin.register(models.ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "prefix", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "prefix", "user__username")
    # Only the hash is stored; tokens are created with `manage.py create_api_token`, never typed here.
    readonly_fields = ("key_hash", "prefix", "created_at", "last_used_at")

    def has_add_permission(self, request):
        return False


@admin.register(models.ReviewSkip)
class ReviewSkipAdmin(admin.ModelAdmin):
    list_display = ("item", "reviewer", "reason", "created_at")
    search_fields = ("reason",)
    raw_id_fields = ("item",)


@admin.register(models.ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ("id", "source_kind", "source", "fmt", "status", "progress", "dataset", "created_by", "created_at")
    list_filter = ("status", "source_kind", "fmt")
    search_fields = ("source", "path", "dataset_name")
    list_select_related = ("dataset", "created_by")
    raw_id_fields = ("dataset", "created_by")


@admin.register(models.CallReplay)
class CallReplayAdmin(admin.ModelAdmin):
    list_display = ("id", "call", "status", "model", "latency_ms", "attempts", "requested_by", "created_at")
    list_filter = ("status", "model")
    search_fields = ("raw_response", "error")
    raw_id_fields = ("call", "requested_by")


from reviewapp import admin_loop  # noqa: E402,F401  (edge cases, provenance, proofs)
