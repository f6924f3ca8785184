from django.conf import settings
from django.db import models
from django.db.models import Q

from reviewapp.models import choices
from reviewapp.models.values import LabelValue


class Judge(models.Model):
    Level = choices.JudgeLevel
    Scale = choices.JudgeScale

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200, blank=True)
    level = models.CharField(max_length=16, choices=Level.choices, default=Level.TURN)
    scale = models.CharField(max_length=16, choices=Scale.choices, default=Scale.ORDINAL)
    scale_min = models.FloatField(null=True, blank=True)
    scale_max = models.FloatField(null=True, blank=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class JudgeVersion(models.Model):
    """An immutable judge spec; the hash of its canonical JSON is its identity."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="versions")
    version = models.CharField(max_length=64)
    spec = models.JSONField(default=dict, blank=True)
    spec_hash = models.CharField(max_length=64, unique=True)
    source = models.CharField(max_length=500, blank=True, help_text="Where the spec came from.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["judge", "version"], name="judge_version_unique_label")]
        ordering = ["judge_id", "created_at"]

    def __str__(self) -> str:
        return f"{self.judge.slug}@{self.version}"


class Signature(LabelValue):
    """A tier-1 rule: a pattern in one language that gives a judge label without an LLM call."""

    Kind = choices.SignatureKind

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="signatures")
    language = models.CharField(max_length=35)
    criterion = models.CharField(max_length=100, blank=True)
    intent = models.CharField(max_length=100, help_text="What the pattern detects: decline, gloss, filler ...")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.SUBSTRING)
    pattern = models.TextField()
    negation_guards = models.JSONField(default=list, blank=True)
    active = models.BooleanField(default=True)
    # Every change is a new SignatureVersion (reviewapp.models.tier1); `version` is the current one.
    version = models.PositiveIntegerField(default=1)
    # Set when the signature's matches contradict gold (below the precision floor): sweeps skip it until fixed.
    suspended_at = models.DateTimeField(null=True, blank=True)
    suspended_reason = models.TextField(blank=True)
    evidence = models.ManyToManyField("reviewapp.Turn", blank=True, related_name="signature_evidence")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["judge", "language", "active"], name="signature_lookup")]

    def __str__(self) -> str:
        return f"{self.judge_id}/{self.language}/{self.intent}: {self.pattern[:40]}"


class Sweep(models.Model):
    """A scoring run over a set of turns with a set of judge versions (or an import of verdicts)."""

    Status = choices.SweepStatus
    Kind = choices.SweepKind

    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.SWEEP)
    name = models.CharField(max_length=200, blank=True)
    dataset = models.ForeignKey(
        "reviewapp.Dataset", null=True, blank=True, on_delete=models.CASCADE, related_name="sweeps"
    )
    judge_versions = models.ManyToManyField(JudgeVersion, related_name="sweeps", blank=True)
    language = models.CharField(max_length=35, blank=True)
    repeats = models.PositiveSmallIntegerField(default=1)
    variance_sample_rate = models.FloatField(default=0.0)
    qa_sample_rate = models.FloatField(default=0.05)
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    total_targets = models.PositiveIntegerField(default=0)
    verdicts_written = models.PositiveIntegerField(default=0)
    tier1_resolved = models.PositiveIntegerField(default=0)
    escalated = models.PositiveIntegerField(default=0)
    unresolved = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    code_version = models.CharField(max_length=64, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Last sign of life from a chunk (its start, its LLM loop): a running sweep silent for
    # TRIBUNAL_SWEEP_STALL_SECONDS has lost its worker, and the reconcile task re-sends its chunks.
    progress_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "created_at"], name="sweep_status")]

    def __str__(self) -> str:
        return f"sweep {self.pk} ({self.kind}, {self.status})"


class PromptText(models.Model):
    """A rendered prompt, stored once and referenced by every call that sent it."""

    sha256 = models.CharField(max_length=64, unique=True)
    text = models.TextField()

    def __str__(self) -> str:
        return self.sha256[:12]


class JudgeCall(models.Model):
    """The archive of one LLM call: enough to replay it."""

    judge_version = models.ForeignKey(JudgeVersion, on_delete=models.CASCADE, related_name="calls")
    sweep = models.ForeignKey(Sweep, null=True, blank=True, on_delete=models.SET_NULL, related_name="calls")
    system_prompt = models.ForeignKey(PromptText, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    user_prompt = models.ForeignKey(PromptText, on_delete=models.PROTECT, related_name="+")
    model = models.CharField(max_length=200)
    params = models.JSONField(default=dict, blank=True)
    raw_response = models.TextField(
        blank=True,
        help_text="The answer text, or the whole HTTP body when it held no answer; cut at JUDGE_CALL_BODY_CAP_BYTES.",
    )
    response_bytes = models.PositiveBigIntegerField(null=True, blank=True, help_text="Full size of what was received.")
    response_sha256 = models.CharField(max_length=64, blank=True, help_text="sha256 of the full text received.")
    response_truncated = models.BooleanField(default=False, help_text="raw_response holds only the first part.")
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=1)
    error = models.TextField(blank=True)
    audio = models.JSONField(
        default=dict, blank=True, help_text="The audio sent (sha256, bytes, duration, source segment), never the bytes."
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"call {self.pk} {self.model}"


class Verdict(LabelValue):
    Tier = choices.VerdictTier
    Status = choices.VerdictStatus

    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="verdicts")
    # judge_version and turn have no index of their own: verdict_version_status and verdict_turn_version
    # start with them. Every index is one more insert per verdict written (an import writes millions).
    judge_version = models.ForeignKey(JudgeVersion, on_delete=models.CASCADE, related_name="verdicts", db_index=False)
    conversation = models.ForeignKey("reviewapp.Conversation", on_delete=models.CASCADE, related_name="verdicts")
    turn = models.ForeignKey(
        "reviewapp.Turn", null=True, blank=True, on_delete=models.CASCADE, related_name="verdicts", db_index=False
    )
    run_index = models.PositiveSmallIntegerField(default=0)
    tier = models.CharField(max_length=16, choices=Tier.choices)
    status = models.CharField(max_length=16, choices=Status.choices)
    flags = models.JSONField(default=list, blank=True)
    sub_scores = models.JSONField(default=dict, blank=True)
    explanation = models.TextField(blank=True)
    raw_text = models.TextField(blank=True, help_text="The judge's answer as received, kept when unresolved.")
    problem_code = models.CharField(
        max_length=32,
        blank=True,
        help_text="Why an answer is unresolved (scoring.parsing.ProblemCode); '' if resolved.",
    )
    metadata = models.JSONField(default=dict, blank=True, help_text="Imported fields Tribunal has no column for.")
    # Indexed only where set (verdict_signature, verdict_call): most verdicts have neither.
    signature = models.ForeignKey(
        Signature, null=True, blank=True, on_delete=models.SET_NULL, related_name="verdicts", db_index=False
    )
    call = models.ForeignKey(
        JudgeCall, null=True, blank=True, on_delete=models.SET_NULL, related_name="verdicts", db_index=False
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["sweep", "judge_version", "turn", "run_index"],
                condition=Q(turn__isnull=False),
                name="verdict_unique_turn_run",
            ),
            models.UniqueConstraint(
                fields=["sweep", "judge_version", "conversation", "run_index"],
                condition=Q(turn__isnull=True),
                name="verdict_unique_conversation_run",
            ),
        ]
        indexes = [
            models.Index(fields=["judge_version", "status"], name="verdict_version_status"),
            models.Index(fields=["turn", "judge_version"], name="verdict_turn_version"),
            models.Index(fields=["signature"], condition=Q(signature__isnull=False), name="verdict_signature"),
            models.Index(fields=["call"], condition=Q(call__isnull=False), name="verdict_call"),
        ]

    def __str__(self) -> str:
        return f"{self.judge_version} {self.status} {self.rating}"
