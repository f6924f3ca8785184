"""The admin: every model, read at a glance. Most are plain lists registered with their options; a few are
read-only because the app's own pages (or database triggers) are the only way they may change."""

from django.contrib import admin

from reviewapp import models
from reviewapp.judging.forms.signatures import SignatureAdminForm


class ReadOnlyAdmin(admin.ModelAdmin):
    """Shown, never added or edited here: the app records these itself (measured, versioned, audited)."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(models.Signature)
class SignatureAdmin(ReadOnlyAdmin):
    # Signatures change on /signatures/, where each change is measured on gold, versioned and audited; an
    # admin form would bypass all three.
    form = SignatureAdminForm
    list_display = ("judge", "language", "intent", "kind", "pattern", "label", "active")
    list_filter = ("judge", "language", "kind", "active")
    search_fields = ("pattern", "intent", "label")
    raw_id_fields = ("evidence",)


@admin.register(models.QueueCount)
class QueueCountAdmin(ReadOnlyAdmin):
    """Database triggers keep these counts (migrations 0001_squashed_0010_queue_counts and 0015)."""

    list_display = ("language", "judge", "dataset", "status", "reasons", "n")
    list_filter = ("status", "language", "judge")

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(models.DatasetCount)
class DatasetCountAdmin(ReadOnlyAdmin):
    """Database triggers keep these counts (migration 0014_dataset_counts)."""

    list_display = ("dataset", "language", "conversations", "turns", "gold_labels", "verdicts")
    list_filter = ("language", "dataset")

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(models.ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "prefix", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "prefix", "user__username")
    # Only the hash is stored; tokens are created with `manage.py create_api_token`, never typed here.
    readonly_fields = ("key_hash", "prefix", "created_at", "last_used_at")

    def has_add_permission(self, request):
        return False


@admin.register(models.UserSession)
class UserSessionAdmin(ReadOnlyAdmin):
    """Who is signed in, until when. A session's key is a bearer credential: it is never shown, so no
    row links to its page (whose address is the key) and no action is offered (a checkbox's value is
    the key). Deleting a user ends their sessions."""

    list_display = ("user", "expire_date")
    list_display_links = None
    list_filter = ("expire_date",)
    search_fields = ("user__username",)
    fields = ("user", "expire_date")
    actions = None

    def has_delete_permission(self, request, obj=None):
        return False


# Kept export lines and what says whether each is current (exports.services.export_lines): written by
# the export task and the database's triggers only, so read-only here.
admin.site.register(
    models.ExportLine,
    ReadOnlyAdmin,
    list_display=("gold_id", "judge_id", "conversation_id", "generation", "epoch"),
    list_filter=("judge_id",),
    fields=(
        "gold_id",
        "judge_id",
        "conversation_id",
        "fingerprint",
        "migration",
        "epoch",
        "generation",
        "key",
        "line",
        "columns",
    ),
)
admin.site.register(
    models.ExportBlock,
    ReadOnlyAdmin,
    list_display=("judge_id", "block", "epoch", "migration"),
    list_filter=("judge_id",),
    fields=(
        "judge_id",
        "block",
        "golds",
        "generations",
        "fingerprint",
        "migration",
        "epoch",
        "keys",
        "lines",
        "rows",
        "columns",
    ),
)
admin.site.register(
    models.ExportGeneration, ReadOnlyAdmin, list_display=("conversation_id", "generation"), list_filter=("generation",)
)
admin.site.register(models.ExportEpoch, ReadOnlyAdmin, list_display=("id", "epoch"), list_filter=("epoch",))
admin.site.register(
    models.ExportLineState,
    ReadOnlyAdmin,
    list_display=("judge_id", "state", "generations", "judge_generations"),
    list_filter=("judge_id",),
)


# The history of each signature, as the signature service records it.
admin.site.register(
    models.SignatureVersion,
    ReadOnlyAdmin,
    list_display=("signature", "version", "change", "changed_by", "created_at"),
    list_filter=("change",),
    search_fields=("signature__pattern", "signature__intent", "note"),
    raw_id_fields=("signature", "sweeps"),
)

# Plain lists: what each page shows, filters on, searches and picks by id (tables too large for a select).
PLAIN = {
    models.Profile: {
        "list_display": ("user", "role", "languages"),
        "list_filter": ("role",),
        "search_fields": ("user__username", "user__email"),
    },
    models.Dataset: {
        "list_display": ("name", "kind", "source", "reviews_required", "blind_review", "created_at"),
        "list_filter": ("kind", "blind_review"),
        "search_fields": ("name", "source", "description"),
    },
    models.Conversation: {
        "list_display": ("external_id", "dataset", "language", "created_at"),
        "list_filter": ("language", "dataset"),
        "search_fields": ("external_id",),
        "list_select_related": ("dataset",),
        "raw_id_fields": ("dataset",),
    },
    models.Turn: {
        "list_display": ("conversation", "position", "role", "text"),
        "list_filter": ("role", "conversation__language"),
        "search_fields": ("text", "intended_text", "conversation__external_id"),
        "raw_id_fields": ("conversation",),
    },
    models.Judge: {
        "list_display": ("slug", "name", "level", "scale", "scale_min", "scale_max"),
        "list_filter": ("level", "scale"),
        "search_fields": ("slug", "name"),
    },
    models.JudgeVersion: {
        "list_display": ("judge", "version", "spec_hash", "source", "created_at"),
        "list_filter": ("judge",),
        "search_fields": ("version", "spec_hash", "source"),
        "readonly_fields": ("spec", "spec_hash"),
    },
    models.SweepChunkLease: {
        "list_display": ("sweep", "judge_version_id", "first_target", "holder", "expires_at"),
        "list_filter": ("expires_at",),
        "search_fields": ("holder",),
        "raw_id_fields": ("sweep",),
    },
    models.Sweep: {
        "list_display": (
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
        ),
        "list_filter": ("kind", "status"),
        "search_fields": ("name",),
    },
    models.PromptText: {"list_display": ("sha256",), "search_fields": ("sha256", "text")},
    models.JudgeCall: {
        "list_display": (
            "id",
            "judge_version",
            "model",
            "latency_ms",
            "prompt_tokens",
            "completion_tokens",
            "error",
            "created_at",
        ),
        "list_filter": ("model",),
        "search_fields": ("raw_response", "error"),
        "raw_id_fields": ("judge_version", "sweep", "system_prompt", "user_prompt"),
    },
    models.Verdict: {
        "list_display": ("id", "judge_version", "tier", "status", "rating", "label", "passed", "run_index"),
        "list_filter": ("tier", "status", "judge_version__judge"),
        "search_fields": ("explanation", "raw_text", "label"),
        "raw_id_fields": ("sweep", "judge_version", "conversation", "turn", "signature", "call"),
    },
    models.Category: {
        "list_display": ("slug", "name", "active"),
        "list_filter": ("active",),
        "search_fields": ("slug", "name", "description"),
    },
    models.GoldLabel: {
        "list_display": ("id", "judge", "source", "rating", "label", "passed", "excluded"),
        "list_filter": ("judge", "source", "excluded"),
        "search_fields": ("label", "conversation__external_id"),
        "raw_id_fields": ("conversation", "turn"),
    },
    models.ReviewItem: {
        "list_display": ("id", "judge", "language", "status", "priority", "claimed_by", "lease_expires_at"),
        "list_filter": ("status", "language", "judge"),
        "search_fields": ("conversation__external_id",),
        "raw_id_fields": ("conversation", "turn", "dataset", "claimed_by"),
    },
    models.Review: {
        "list_display": ("id", "item", "reviewer", "rating", "label", "created_at"),
        "list_filter": ("reviewer",),
        "search_fields": ("comment",),
        "raw_id_fields": ("item",),
    },
    models.Comment: {
        "list_display": ("id", "turn", "author", "flagged_for_lead", "created_at"),
        "list_filter": ("flagged_for_lead", "categories"),
        "search_fields": ("body",),
        "raw_id_fields": ("turn", "parent"),
    },
    models.Adjudication: {
        "list_display": ("item", "lead", "rating", "label", "created_at"),
        "search_fields": ("rationale",),
        "raw_id_fields": ("item",),
    },
    models.AuditEvent: {
        "list_display": ("created_at", "actor", "action", "object_type", "object_id"),
        "list_filter": ("action", "object_type"),
        "search_fields": ("object_id",),
    },
    models.ExportSnapshot: {
        "list_display": ("name", "version", "format", "status", "row_count", "sha256", "created_at"),
        "list_filter": ("format", "status"),
        "search_fields": ("name", "sha256"),
    },
    models.ReviewSkip: {
        "list_display": ("item", "reviewer", "reason", "created_at"),
        "search_fields": ("reason",),
        "raw_id_fields": ("item",),
    },
    models.ImportJob: {
        "list_display": (
            "id",
            "source_kind",
            "source",
            "fmt",
            "status",
            "progress",
            "dataset",
            "created_by",
            "created_at",
        ),
        "list_filter": ("status", "source_kind", "fmt"),
        "search_fields": ("source", "path", "dataset_name"),
        "list_select_related": ("dataset", "created_by"),
        "raw_id_fields": ("dataset", "created_by"),
    },
    models.CallReplay: {
        "list_display": ("id", "call", "status", "model", "latency_ms", "attempts", "requested_by", "created_at"),
        "list_filter": ("status", "model"),
        "search_fields": ("raw_response", "error"),
        "raw_id_fields": ("call", "requested_by"),
    },
    models.EdgeCase: {
        "list_display": ("judge", "position", "case", "pattern"),
        "list_filter": ("judge",),
        "search_fields": ("case", "coverage", "pattern"),
    },
    models.EdgeCaseTag: {
        "list_display": ("edge_case", "conversation", "source", "added_by", "created_at"),
        "list_filter": ("source",),
        "raw_id_fields": ("conversation",),
    },
    models.VersionProvenance: {
        "list_display": ("version", "parent", "approved_by", "created_at"),
        "search_fields": ("version__version", "parent__version", "note"),
        "raw_id_fields": ("items", "comments"),
    },
    models.ProofRun: {
        "list_display": ("version", "parent", "started_by", "created_at"),
        "search_fields": ("version__version", "parent__version"),
        "raw_id_fields": ("main_sweeps", "rerun_sweeps"),
    },
}
for model, options in PLAIN.items():
    admin.site.register(model, **options)
