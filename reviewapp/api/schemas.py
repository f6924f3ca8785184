"""The API's request and response shapes (pydantic, through django-ninja); docs/api/openapi.yaml is made from them.

Requests are strict: an unknown field, a string where a number belongs ("2"), a boolean where a
number belongs, or a float where a whole number belongs is refused with a 400 naming the field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from ninja import Field, Schema
from pydantic import ConfigDict, StrictInt, StrictStr

from reviewapp.judging.services.sweeps import MAX_REPEATS

# Strict floats take whole numbers too (0, 1) but neither booleans nor strings.
Rate = Annotated[float, Field(ge=0, le=1)]


class StrictRequest(Schema):
    model_config = ConfigDict(extra="forbid", strict=True)


class SweepRequest(StrictRequest):
    dataset: Annotated[StrictStr, Field(min_length=1)] | StrictInt = Field(description="Dataset name or id.")
    judges: list[StrictStr] = Field(
        min_length=1,
        description='"slug" (its newest version that can run: never an imported placeholder) or "slug@version".',
    )
    repeats: StrictInt = Field(1, ge=1, le=MAX_REPEATS)
    variance_sample: Rate = 0.1
    qa_sample: Rate = 0.05
    language: StrictStr | None = Field(None, description="BCP 47 code (fr, fr-CA); empty or absent for every language.")
    name: StrictStr | None = Field(None, max_length=200)
    scope: StrictStr | None = Field(
        None,
        description='Re-score only part of the dataset: "commented", "gold" or "moved:A,B" (two version labels '
        "of the swept judge); empty for every target.",
    )
    category: StrictStr | None = Field(
        None, description='With scope "commented": only comments with this category slug.'
    )


class Error(Schema):
    error: str
    status: int


class SweepCounts(Schema):
    targets: int
    verdicts_written: int
    expected_verdicts: int
    tier1_resolved: int
    escalated: int
    unresolved: int
    failed: int


class SignatureVersion(Schema):
    signature: int
    version: int


class Sweep(Schema):
    id: int
    name: str
    kind: Literal["sweep", "import"]
    status: Literal["pending", "running", "done", "failed", "cancelled"]
    dataset: str | None
    language: str | None
    judge_versions: list[str]
    repeats: int
    counts: SweepCounts
    code_version: str = Field(description="git SHA the sweep ran with.")
    signature_versions: list[SignatureVersion] = Field(
        description="The tier-1 signature versions the sweep recorded at its start "
        "(suspended and switched-off ones are left out)."
    )
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    url: str
    gate_url: str


class GateRow(Schema):
    judge_version: str
    criterion: str
    targets: int
    passed: int
    failed: int
    unresolved: int
    not_scored: int
    pass_rate: float | None
    resolved_pass_rate: float | None
    threshold: float | None
    threshold_source: str
    required: bool
    ok: bool | None


class GateReport(Schema):
    sweep: int
    status: str
    passed: bool
    failing: list[str]
    rows: list[GateRow]


class Snapshot(Schema):
    id: int
    name: str
    version: int
    judge: str | None
    format: Literal["jsonl", "csv", "parquet", "eva"]
    status: Literal["pending", "running", "done", "failed"]
    progress: int = Field(ge=0, le=100)
    rows: int
    sha256: str | None
    filters: dict
    code_version: str
    created_at: datetime
    download_url: str | None


class SnapshotList(Schema):
    snapshots: list[Snapshot] = Field(description="Newest first, at most 200.")


# The error statuses every operation may answer (each adds its own 409 where it has one).
ERRORS = dict.fromkeys((400, 401, 403, 404, 405, 500), Error)
