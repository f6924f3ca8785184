"""The common writer: puts a `ParsedImport` into the database in bulk.

Called only by `reviewapp.corpus.services.imports.dataset_import`, inside its transaction. Every model is
written with `bulk_create(ignore_conflicts=True)` in batches and its ids re-read afterwards, so the
number of queries does not grow with the number of rows (up to `batch_size` rows per model) and a
second import of the same file inserts nothing: every row has a unique key (conversation per
dataset, turn per position, gold label per judge and target, verdict per sweep, version, target and
run). Rows that already exist are never overwritten. Nothing is cut to fit a column here: the
parsers have refused whatever would not fit (importers/limits.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db.models import Model
from django.utils import timezone

from reviewapp.corpus.importers.audio import store_audio
from reviewapp.corpus.importers.records import ParsedImport
from reviewapp.models import Conversation, Dataset, GoldLabel, Judge, JudgeVersion, Sweep, Turn, Verdict

BATCH_SIZE = 2000


def imported_spec(judge: str, version: str) -> dict[str, Any]:
    return {"imported": True, "judge": judge, "version": version}


def spec_hash(spec: dict[str, Any]) -> str:
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def write_parsed(
    parsed: ParsedImport, *, dataset_name: str, source: str, batch_size: int = BATCH_SIZE
) -> tuple[Dataset, dict[str, int]]:
    """Write everything in `parsed`; return the dataset and how many rows of each kind were new."""
    dataset, dataset_created = Dataset.objects.get_or_create(
        name=dataset_name,
        defaults={"kind": parsed.dataset_kind, "source": source[:500], "metadata": {"format": parsed.fmt}},
    )
    before = _dataset_counts(dataset)
    created = {"dataset": int(dataset_created)}

    judges, created["judges"] = _ensure_judges(parsed)
    conversations = parsed.conversations

    _bulk(
        Conversation,
        (
            Conversation(dataset=dataset, external_id=c.external_id, language=c.language, metadata=c.metadata)
            for c in conversations
        ),
        batch_size,
    )
    conversation_ids = dict(Conversation.objects.filter(dataset=dataset).values_list("external_id", "id"))
    store_audio(conversations, conversation_ids)

    _bulk(
        Turn,
        (
            Turn(
                conversation_id=conversation_ids[c.external_id],
                position=t.position,
                role=t.role,
                text=t.text,
                intended_text=t.intended_text,
                audio_start_ms=t.audio_start_ms,
                audio_end_ms=t.audio_end_ms,
                entities=t.entities,
                metadata=t.metadata,
            )
            for c in conversations
            for t in c.turns
        ),
        batch_size,
    )
    needs_turn_ids = any(item.turn_position is not None for c in conversations for item in [*c.labels, *c.verdicts])
    turn_ids: dict[tuple[int, int], int] = {}
    if needs_turn_ids:
        turn_ids = {
            (conversation_id, position): turn_id
            for conversation_id, position, turn_id in Turn.objects.filter(conversation__dataset=dataset).values_list(
                "conversation_id", "position", "id"
            )
        }

    def target(conversation_external_id: str, position: int | None) -> tuple[int, int | None]:
        conversation_id = conversation_ids[conversation_external_id]
        return conversation_id, None if position is None else turn_ids[(conversation_id, position)]

    gold: list[GoldLabel] = []
    for c in conversations:
        for label in c.labels:
            conversation_id, turn_id = target(c.external_id, label.turn_position)
            gold.append(
                GoldLabel(
                    judge_id=judges[label.judge],
                    conversation_id=conversation_id,
                    turn_id=turn_id,
                    source=GoldLabel.Source.IMPORTED,
                    rating=label.rating,
                    label=label.label,
                    passed=label.passed,
                    failure_modes=label.failure_modes,
                    excluded=label.excluded,
                    metadata=label.metadata,
                )
            )
    _bulk(GoldLabel, gold, batch_size)

    created["judge_versions"] = created["sweeps"] = 0
    if any(c.verdicts for c in conversations):
        versions, created["judge_versions"] = _ensure_versions(parsed, judges, source)
        sweep, sweep_created = _import_sweep(parsed, dataset, source, versions.values())
        created["sweeps"] = int(sweep_created)
        verdicts: list[Verdict] = []
        for c in conversations:
            for v in c.verdicts:
                conversation_id, turn_id = target(c.external_id, v.turn_position)
                verdicts.append(
                    Verdict(
                        sweep=sweep,
                        judge_version_id=versions[(v.judge, v.version)],
                        conversation_id=conversation_id,
                        turn_id=turn_id,
                        run_index=v.run_index,
                        tier=Verdict.Tier.IMPORTED,
                        status=v.status,
                        rating=v.rating,
                        label=v.label,
                        passed=v.passed,
                        flags=v.flags,
                        sub_scores=v.sub_scores,
                        explanation=v.explanation,
                        raw_text=v.raw_text,
                        problem_code=v.problem_code,
                    )
                )
        _bulk(Verdict, verdicts, batch_size)
        if sweep_created:
            sweep.verdicts_written = sweep.verdicts.count()
            sweep.save(update_fields=["verdicts_written"])

    after = _dataset_counts(dataset)
    for key in ("conversations", "turns", "labels", "verdicts"):
        created[key] = after[key] - before[key]
    return dataset, created


def _bulk(model: type[Model], rows: Iterable[Model], batch_size: int) -> None:
    batch: list[Model] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= batch_size:
            model.objects.bulk_create(batch, ignore_conflicts=True)
            batch = []
    if batch:
        model.objects.bulk_create(batch, ignore_conflicts=True)


def _dataset_counts(dataset: Dataset) -> dict[str, int]:
    return {
        "conversations": Conversation.objects.filter(dataset=dataset).count(),
        "turns": Turn.objects.filter(conversation__dataset=dataset).count(),
        "labels": GoldLabel.objects.filter(conversation__dataset=dataset, source=GoldLabel.Source.IMPORTED).count(),
        "verdicts": Verdict.objects.filter(conversation__dataset=dataset, tier=Verdict.Tier.IMPORTED).count(),
    }


def _ensure_judges(parsed: ParsedImport) -> tuple[dict[str, int], int]:
    slugs = set(parsed.judges)
    for c in parsed.conversations:
        slugs.update(item.judge for item in [*c.labels, *c.verdicts])
    if not slugs:
        return {}, 0
    existing = set(Judge.objects.filter(slug__in=slugs).values_list("slug", flat=True))
    missing = []
    for slug in sorted(slugs - existing):
        defaults = parsed.judges.get(slug)
        missing.append(
            Judge(
                slug=slug,
                name=slug.replace("_", " ").capitalize(),
                level=defaults.level if defaults else Judge.Level.TURN,
                scale=defaults.scale if defaults else Judge.Scale.ORDINAL,
                scale_min=defaults.scale_min if defaults else None,
                scale_max=defaults.scale_max if defaults else None,
                description=f"Created by an import of {parsed.source}.",
            )
        )
    Judge.objects.bulk_create(missing, ignore_conflicts=True)
    return dict(Judge.objects.filter(slug__in=slugs).values_list("slug", "id")), len(missing)


def _ensure_versions(
    parsed: ParsedImport, judges: dict[str, int], source: str
) -> tuple[dict[tuple[str, str], int], int]:
    wanted = sorted({(v.judge, v.version) for c in parsed.conversations for v in c.verdicts})
    slug_of = {judge_id: slug for slug, judge_id in judges.items()}
    filters = {"judge_id__in": [judges[slug] for slug, _ in wanted], "version__in": {version for _, version in wanted}}
    before = JudgeVersion.objects.filter(**filters).count()
    rows = []
    for slug, version in wanted:
        spec = imported_spec(slug, version)
        rows.append(
            JudgeVersion(
                judge_id=judges[slug], version=version, spec=spec, spec_hash=spec_hash(spec), source=source[:500]
            )
        )
    # A version label that already exists (imported earlier or defined in Tribunal) is reused as is.
    JudgeVersion.objects.bulk_create(rows, ignore_conflicts=True)
    found = {
        (slug_of[judge_id], version): version_id
        for judge_id, version, version_id in JudgeVersion.objects.filter(**filters).values_list(
            "judge_id", "version", "id"
        )
    }
    return {key: found[key] for key in wanted}, len(found) - before


def _import_sweep(
    parsed: ParsedImport, dataset: Dataset, source: str, version_ids: Iterable[int]
) -> tuple[Sweep, bool]:
    """One sweep of kind=import per dataset and imported content (the file's sha256)."""
    sweep = Sweep.objects.filter(
        kind=Sweep.Kind.IMPORT, dataset=dataset, params__content_sha256=parsed.content_sha256
    ).first()
    if sweep is not None:
        return sweep, False
    now = timezone.now()
    total = sum(len(c.verdicts) for c in parsed.conversations)
    sweep = Sweep.objects.create(
        kind=Sweep.Kind.IMPORT,
        name=f"import of {parsed.source}"[:200],
        dataset=dataset,
        status=Sweep.Status.DONE,
        params={"source": source, "format": parsed.fmt, "content_sha256": parsed.content_sha256},
        total_targets=total,
        code_version=getattr(settings, "TRIBUNAL_CODE_VERSION", "")[:64],
        started_at=now,
        finished_at=now,
    )
    sweep.judge_versions.add(*version_ids)
    return sweep, True
