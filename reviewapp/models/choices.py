"""The states, kinds and sources each model can take, side by side: a model names its own as a nested
alias (`ReviewItem.Status` is `ReviewItemStatus`), and the rest of the code reads them through the model.
Migrations keep the values as literal lists, so changing one here needs a migration like any field."""

from django.db import models


class ExportSnapshotStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class DatasetKind(models.TextChoices):
    RUN = "run", "Agent run"
    VALIDATION = "validation", "Validation set"
    REVIEW = "review", "Review set"
    DEMO = "demo", "Demo"


class TurnRole(models.TextChoices):
    USER = "user", "User"
    AGENT = "agent", "Agent"
    TOOL_CALL = "tool_call", "Tool call"
    TOOL_RESPONSE = "tool_response", "Tool response"
    SYSTEM = "system", "System"


class ImportJobStatus(models.TextChoices):
    PENDING = "pending", "Waiting for a worker"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Refused"


class ImportJobSource(models.TextChoices):
    UPLOAD = "upload", "Uploaded file"
    PATH = "path", "Server path"


class CallReplayStatus(models.TextChoices):
    PENDING = "pending", "Waiting for a worker"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class JudgeLevel(models.TextChoices):
    TURN = "turn", "Turn"
    CONVERSATION = "conversation", "Conversation"


class JudgeScale(models.TextChoices):
    BINARY = "binary", "Binary 0/1"
    ORDINAL = "ordinal", "Ordinal"
    WEIGHTED = "weighted", "Weighted sub-metrics 0-100"
    RUBRIC = "rubric", "Rubric criteria"


class SignatureKind(models.TextChoices):
    SUBSTRING = "substring", "Substring"
    STEM = "stem", "Stem"
    REGEX = "regex", "Regular expression"


class SweepStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class SweepKind(models.TextChoices):
    SWEEP = "sweep", "Sweep"
    IMPORT = "import", "Imported verdicts"


class VerdictTier(models.TextChoices):
    SIGNATURE = "signature", "Signature (tier 1)"
    LLM = "llm", "LLM (tier 2)"
    IMPORTED = "imported", "Imported"


class VerdictStatus(models.TextChoices):
    RESOLVED = "resolved", "Resolved"
    UNRESOLVED = "unresolved", "Unresolved"
    ERROR = "error", "Error"
    # A per-turn judge that gave this turn a null rating (EVA: "not applicable"): not a decision,
    # not a failure to decide; left out of every figure and of triage.
    NOT_RATED = "not_rated", "Not rated"


class EdgeCaseTagSource(models.TextChoices):
    RULE = "rule", "Matched the case's pattern"
    HAND = "hand", "Tagged by hand"


class GoldLabelSource(models.TextChoices):
    IMPORTED = "imported", "Imported human label"
    ADJUDICATED = "adjudicated", "Adjudicated by a lead"
    UNANIMOUS = "unanimous", "Unanimous reviews"


class ReviewItemStatus(models.TextChoices):
    OPEN = "open", "Open"
    IN_REVIEW = "in_review", "In review"
    AWAITING_ADJUDICATION = "awaiting_adjudication", "Awaiting adjudication"
    CLOSED = "closed", "Closed"


class ReviewItemReason(models.TextChoices):
    UNRESOLVED = "unresolved", "Unresolved"
    RUNS_DISAGREE = "runs_disagree", "Runs disagree"
    JUDGES_DISAGREE = "judges_disagree", "Judges disagree"
    UNCERTAIN = "uncertain", "Uncertain answer"
    QA_SAMPLE = "qa_sample", "QA sample"
    VERSION_MOVED = "version_moved", "Version moved"
    HIGH_VARIANCE = "high_variance", "High run-to-run variance"
    GOLD_DISAGREES = "gold_disagrees", "Judge differs from gold"
    IMPORTED = "imported", "Imported for review"


class SignatureVersionChange(models.TextChoices):
    CREATED = "created", "Created"
    EDITED = "edited", "Edited"
    SWITCHED_OFF = "switched_off", "Switched off"
    SWITCHED_ON = "switched_on", "Switched on"
    SUSPENDED = "suspended", "Suspended (contradicts gold)"
    REINSTATED = "reinstated", "Reinstated (agrees with gold again)"
