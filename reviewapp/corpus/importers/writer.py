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
from collections.abc import Iterable, Iterator
from typing import Any

from django.conf import settings
from django.db.models import Model
from django.utils import timezone

from reviewapp.corpus.importers.audio import store_audio
from reviewapp.corpus.importers.records import LABEL_VALUES, TURN_VALUES, VERDICT_VALUES, ParsedImport
from reviewapp.models import Conversation, Dataset, GoldLabel, Judge, JudgeVersion, Sweep, Turn, Verdict
from scoring.records import record_dict

BATCH_SIZE = 2000


def imported_spec(judge: str, version: str) -> dict[str, Any]:
    return {"imported": True, "judge": judge, "version": version}


def spec_hash(spec: dict[str, Any]) -> str:
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def new_judge(slug: str, parsed: ParsedImport) -> Judge:
    """A judge the import names and the database lacks, made from the defaults the input gave for it."""
    defaults = parsed.judges.get(slug)
    return Judge(
        slug=slug,
        name=slug.replace("_", " ").capitalize(),
        level=defaults.level if defaults else Judge.Level.TURN,
        scale=defaults.scale if defaults else Judge.Scale.ORDINAL,
        scale_min=defaults.scale_min if defaults else None,
        scale_max=defaults.scale_max if defaults else None,
        description=f"Created by an import of {parsed.source}.",
    )


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
            Turn(conversation_id=conversation_ids[c.external_id], **record_dict(t, *TURN_VALUES))
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

    def targets(kind: str) -> Iterator[tuple[Any, dict[str, Any]]]:
        """Each parsed label or verdict with the conversation and turn ids it targets."""
        for c in conversations:
            conversation_id = conversation_ids[c.external_id]
            for item in getattr(c, kind):
                position = item.turn_position
                turn_id = None if position is None else turn_ids[(conversation_id, position)]
                yield item, {"conversation_id": conversation_id, "turn_id": turn_id}

    _bulk(
        GoldLabel,
        (
            GoldLabel(
                judge_id=judges[label.judge],
                source=GoldLabel.Source.IMPORTED,
                **target,
                **record_dict(label, *LABEL_VALUES),
            )
            for label, target in targets("labels")
        ),
        batch_size,
    )

    created["judge_versions"] = created["sweeps"] = 0
    if any(c.verdicts for c in conversations):
        versions, created["judge_versions"] = _ensure_versions(parsed, judges, source)
        sweep, sweep_created = _import_sweep(parsed, dataset, source, versions.values())
        created["sweeps"] = int(sweep_created)
        _bulk(
            Verdict,
            (
                Verdict(
                    sweep=sweep,
                    judge_version_id=versions[(v.judge, v.version)],
                    tier=Verdict.Tier.IMPORTED,
                    **target,
                    **record_dict(v, *VERDICT_VALUES),
                )
                for v, target in targets("verdicts")
            ),
            batch_size,
        )
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
    missing = [new_judge(slug, parsed) for slug in sorted(slugs - existing)]
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
