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


class ExportLine(models.Model):
    """A flat export's JSONL line, its row of Parquet columns (as CSV) and its datasheet key for one
    gold label, as the database builds them (`export_sql.postgres_lines_statement`), kept so the next
    JSONL or Parquet export reads them instead of building them.

    PostgreSQL only. A line is used only while everything it was built from is unchanged: the code
    that builds it (`fingerprint`), the database's schema (`migration`, the last applied), the names
    every line draws on (`epoch`, ExportEpoch) and its conversation's data (`generation`,
    ExportGeneration). Triggers (migration 0018) move the epoch and the generations forward in the
    transaction that changes the data, so no snapshot can see a change and a line built before it as
    current together. Built by `exports.services.export_lines.refresh`."""

    gold_id = models.BigIntegerField(primary_key=True)
    judge_id = models.BigIntegerField()
    conversation_id = models.BigIntegerField()
    fingerprint = models.CharField(max_length=16)
    migration = models.IntegerField()
    epoch = models.BigIntegerField()
    generation = models.BigIntegerField()
    key = models.TextField()
    line = models.TextField()
    columns = models.TextField()  # the same row for Parquet: a CSV row of the key and the flat columns

    class Meta:
        indexes = [models.Index(fields=["judge_id", "conversation_id"], name="exportline_judge")]

    def __str__(self) -> str:
        return f"export line of gold label {self.gold_id}"


class ExportBlock(models.Model):
    """The kept lines of one block of conversations (CONVERSATIONS_PER_BLOCK of them by id, `block`
    = conversation id // that) for one judge, joined as a JSONL export reads them, with their
    datasheet keys, and their CSV rows (`columns`, `rows` of them) as a Parquet export reads them:
    an export without filters reads one row here per block instead of looking up each row's
    ExportLine and its conversation's generation.

    PostgreSQL only. Composed from current ExportLines by `export_lines.refresh`, and read only while
    it is what those lines would give: the same winning gold labels in the same order (`golds`, their
    ids), every conversation with an id in the block at the generation it had (`generations`), the
    same code (`fingerprint`, `export_sql.block_fingerprint`), schema (`migration`) and `epoch`.
    Otherwise the export reads the block's rows one by one, as kept lines or built."""

    judge_id = models.BigIntegerField()
    block = models.BigIntegerField()
    golds = models.TextField()
    generations = models.TextField()
    fingerprint = models.CharField(max_length=16)
    migration = models.IntegerField()
    epoch = models.BigIntegerField()
    keys = models.TextField()
    lines = models.TextField()
    # Defaults in the database too: a process still running the code from before these columns
    # composes blocks without them (read as stale: their fingerprint is not this code's).
    rows = models.IntegerField(db_default=0)
    columns = models.TextField(db_default="")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["judge_id", "block"], name="exportblock_judge_block")]

    def __str__(self) -> str:
        return f"export block {self.block} of judge {self.judge_id}"


class ExportGeneration(models.Model):
    """How many times a conversation's exported data has changed since its lines were first kept:
    moved forward by the triggers on every table a line draws on (turns, gold labels, verdicts, review
    items, reviews, adjudications, comments and their categories)."""

    conversation_id = models.BigIntegerField(primary_key=True)
    generation = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"conversation {self.conversation_id}: generation {self.generation}"


class ExportLineState(models.Model):
    """What the kept lines of one judge were last brought current against (`export_lines.refresh`),
    read before that refresh built: the code and schema, the epoch, and the count, largest id and sum
    of ids of the judge's gold labels (`state`); the count and sum of every conversation's generation
    (`generations`); the same of the conversations the judge has gold labels in (`judge_generations`).
    Each part only moves forward (or, for the counts and sums, changes) with a change a line draws on.
    While `state` and `generations` read the same and the judge still has kept lines, a refresh has
    nothing to build and returns after one statement instead of walking every gold label; when only
    `generations` moved, the judge's own generations tell whether the change was one of its
    conversations (one more statement, a join of its gold labels: still no walk)."""

    judge_id = models.BigIntegerField(primary_key=True)
    state = models.TextField()
    generations = models.TextField(default="")
    judge_generations = models.TextField(default="")

    def __str__(self) -> str:
        return f"export lines of judge {self.judge_id}: {self.state}"


class ExportEpoch(models.Model):
    """One row: moved forward when a name many lines hold changes (a judge's slug or version, a
    category's slug, a dataset's name) or a table they draw on is truncated."""

    epoch = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"export epoch {self.epoch}"
