"""Tribunal's data model; one module per concern (see DESIGN.md, "Data model")."""

from .audit import AuditEvent, ExportSnapshot
from .corpus import Conversation, Dataset, Turn
from .jobs import CallReplay, ImportJob
from .judging import Judge, JudgeCall, JudgeVersion, PromptText, Signature, Sweep, Verdict
from .loop import EdgeCase, EdgeCaseTag, ProofRun, VersionProvenance
from .people import ApiToken, Profile, Role
from .recovery import SweepChunkLease
from .review import Adjudication, Category, Comment, GoldLabel, QueueCount, Review, ReviewItem, ReviewSkip
from .tier1 import SignatureVersion

__all__ = [
    "Adjudication",
    "ApiToken",
    "AuditEvent",
    "CallReplay",
    "Category",
    "Comment",
    "Conversation",
    "Dataset",
    "EdgeCase",
    "EdgeCaseTag",
    "ExportSnapshot",
    "GoldLabel",
    "ImportJob",
    "Judge",
    "JudgeCall",
    "JudgeVersion",
    "Profile",
    "PromptText",
    "ProofRun",
    "QueueCount",
    "Review",
    "ReviewItem",
    "ReviewSkip",
    "Role",
    "Signature",
    "SignatureVersion",
    "Sweep",
    "SweepChunkLease",
    "Turn",
    "Verdict",
    "VersionProvenance",
]
