"""Tribunal's data model; one module per concern (see DESIGN.md, "Data model")."""

from reviewapp.models.audit import (
    AuditEvent,
    ExportBlock,
    ExportEpoch,
    ExportGeneration,
    ExportLine,
    ExportLineState,
    ExportSnapshot,
)
from reviewapp.models.corpus import Conversation, Dataset, DatasetCount, Turn
from reviewapp.models.jobs import CallReplay, ImportJob
from reviewapp.models.judging import Judge, JudgeCall, JudgeVersion, PromptText, Signature, Sweep, Verdict
from reviewapp.models.loop import EdgeCase, EdgeCaseTag, ProofRun, VersionProvenance
from reviewapp.models.people import ApiToken, Profile, Role, UserSession
from reviewapp.models.recovery import SweepChunkLease
from reviewapp.models.review import (
    Adjudication,
    Category,
    Comment,
    GoldLabel,
    QueueCount,
    Review,
    ReviewItem,
    ReviewSkip,
)
from reviewapp.models.tier1 import SignatureVersion

__all__ = [
    "Adjudication",
    "ApiToken",
    "AuditEvent",
    "CallReplay",
    "Category",
    "Comment",
    "Conversation",
    "Dataset",
    "DatasetCount",
    "EdgeCase",
    "EdgeCaseTag",
    "ExportBlock",
    "ExportEpoch",
    "ExportGeneration",
    "ExportLine",
    "ExportLineState",
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
    "UserSession",
    "Verdict",
    "VersionProvenance",
]
