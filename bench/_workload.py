"""The side-by-side workload, shared by bench/compare.py and bench/reviewers.py.

N judged turns: each is a conversation of 9 messages (about 1.8 KB of text, agent and user taking
turns, the agent first and last) whose last agent turn carries an imported verdict of one binary judge
and an imported gold label. Every third verdict disagrees with gold, so those turns need review
(`gold_disagrees`); a 10% QA sample, drawn by position (not by agreement), needs two reviews, as
`services.queue_items` would give it. Half the verdicts fail.

`build_tribunal` writes it straight into an empty, migrated database in bulk (what an import and its
triage would leave, without their per-row work), so 1M turns take minutes. `records` yields the same
data as Tribunal JSONL records (the import operation) and `ls_task` as Label Studio tasks, so every
system holds the same text and the same verdicts.

`write_calls` is the bulk writer of conversations and their turns that this workload, bench/review_queue.py,
bench/sweep.py and bench/api_latency.py use; bench/export_memory.py (SQL over a number series) and
bench/import_rate.py (through `dataset_import`) write theirs their own way.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from typing import Any

JUDGE = "task_completion"
VERSION = "2026-01"
DATASET = "bench-side-by-side"
LANGUAGE = "en"
MESSAGES = 9
REVIEWERS = 50
PASSWORD = "bench-reviewer-password"
QA_EVERY = 10
BATCH = 5000

WORDS = [
    "the",
    "flight",
    "seat",
    "window",
    "fare",
    "change",
    "confirm",
    "booking",
    "today",
    "morning",
    "refund",
    "bag",
    "gate",
    "delay",
    "option",
    "evening",
    "passenger",
    "ticket",
    "return",
    "upgrade",
    "aisle",
    "itinerary",
    "receipt",
    "connection",
    "arrival",
    "departure",
]


def _text(rng: random.Random, conversation: int, position: int) -> str:
    role = "Agent" if position % 2 == 0 else "Caller"
    words = " ".join(rng.choices(WORDS, k=26))
    return f"{role} message {position} of call {conversation}: {words}."[:200]


def judge_passed(i: int) -> bool:
    return i % 2 == 0


def disagrees(i: int) -> bool:
    """Every third turn's verdict differs from its gold label: those need review."""
    return i % 3 == 0


def gold_passed(i: int) -> bool:
    return not judge_passed(i) if disagrees(i) else judge_passed(i)


def in_qa_sample(i: int) -> bool:
    return i % QA_EVERY == 5


def needs_review(i: int) -> bool:
    return disagrees(i) or in_qa_sample(i)


def external_id(i: int) -> str:
    return f"call-{i:07d}"


def messages(i: int) -> list[tuple[str, str]]:
    """(role, text) of conversation i's nine messages: agent first and last."""
    rng = random.Random(i)
    return [("agent" if p % 2 == 0 else "user", _text(rng, i, p)) for p in range(MESSAGES)]


def records(size: int, *, start: int = 0) -> Iterator[dict[str, Any]]:
    """Tribunal JSONL records (docs/formats.md) of conversations start .. start + size."""
    for i in range(start, start + size):
        turns: list[dict[str, Any]] = [{"role": role, "text": text} for role, text in messages(i)]
        turns[-1]["labels"] = [{"judge": JUDGE, "passed": gold_passed(i)}]
        turns[-1]["verdicts"] = [{"judge": JUDGE, "version": VERSION, "passed": judge_passed(i)}]
        yield {"external_id": external_id(i), "language": LANGUAGE, "turns": turns}


def ls_task(i: int) -> dict[str, Any]:
    """The same conversation as a Label Studio task: the dialogue, the verdict and the gold."""
    return {
        "data": {
            "external_id": external_id(i),
            "dialogue": [{"author": role, "text": text} for role, text in messages(i)],
            "judge_passed": judge_passed(i),
            "gold_passed": gold_passed(i),
            "judge_failed": disagrees(i),
        }
    }


LS_LABEL_CONFIG = """<View>
  <Paragraphs name="dialogue" value="$dialogue" layout="dialogue" nameKey="author" textKey="text"/>
  <Header value="Judge passed: $judge_passed"/>
  <Choices name="agree" toName="dialogue" choice="single" showInline="true">
    <Choice value="agree"/>
    <Choice value="disagree"/>
  </Choices>
  <Choices name="passed" toName="dialogue" choice="single" showInline="true">
    <Choice value="pass"/>
    <Choice value="fail"/>
  </Choices>
  <TextArea name="comment" toName="dialogue" rows="2"/>
</View>"""


def write_calls(dataset, numbers: range, *, external_id, language, messages) -> list:
    """For each n of `numbers`, conversation `external_id(n)` of `dataset` in `language(n)` with the turns
    `messages(n)` ((role, text), in order), written in bulk; the last turn of each conversation, in order."""
    from reviewapp.models import Conversation, Turn

    conversations = Conversation.objects.bulk_create(
        (Conversation(dataset=dataset, external_id=external_id(n), language=language(n)) for n in numbers),
        batch_size=BATCH,
    )
    calls = [
        [Turn(conversation=c, position=p, role=role, text=text) for p, (role, text) in enumerate(messages(n))]
        for n, c in zip(numbers, conversations, strict=True)
    ]
    Turn.objects.bulk_create((turn for call in calls for turn in call), batch_size=BATCH * MESSAGES)
    return [call[-1] for call in calls]


def write_verdicts(sweep, version, judged) -> None:
    """A verdict of `version` in `sweep` for each (turn, fields) of `judged`, in bulk: imported and
    resolved unless `fields` say otherwise."""
    from reviewapp.models import Verdict

    defaults = {"tier": Verdict.Tier.IMPORTED, "status": Verdict.Status.RESOLVED}
    Verdict.objects.bulk_create(
        Verdict(
            sweep=sweep, judge_version=version, conversation_id=turn.conversation_id, turn=turn, **defaults | fields
        )
        for turn, fields in judged
    )


def settle(cursor) -> None:
    """What a PostgreSQL server has done within minutes of a bulk write, before anything is timed:
    planner statistics and the visibility map (VACUUM ANALYZE: autovacuum may be off), and the
    written pages out of memory (CHECKPOINT). Without the checkpoint the first run on a database just
    built timed its exports while the server was still writing the build out (the checkpoints that
    its WAL asked for, spread over minutes): on one machine a kept JSONL export of 100,000 rows ran
    at 91,719 rows/s in that run against 151,549 in the next, and at 146,174 in a first run with it.
    CHECKPOINT needs a superuser or pg_checkpoint; without either the bench says so on stderr (the
    callers read what these functions print on stdout: reset_tribunal's True) and goes on."""
    from django.db import DatabaseError

    cursor.execute("VACUUM ANALYZE")
    try:
        cursor.execute("CHECKPOINT")
    except DatabaseError as exc:
        print(
            f"no CHECKPOINT after the bulk write ({exc}): the first timings may include writing it out", file=sys.stderr
        )


def build_tribunal(size: int, *, reviewers: int = REVIEWERS, progress=print) -> dict[str, int]:
    """Write the workload into an empty migrated database (django.setup() done). Returns row counts."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.db import connection, transaction
    from django.utils import timezone

    from reviewapp.corpus.importers.writer import imported_spec, spec_hash
    from reviewapp.models import Dataset, GoldLabel, Judge, JudgeVersion, Profile, ReviewItem, Role, Sweep
    from reviewapp.triage.services.triage import PRIORITY, QA_REVIEWS_REQUIRED

    now = timezone.now()
    dataset = Dataset.objects.create(name=DATASET, kind=Dataset.Kind.RUN, source="bench")
    judge = Judge.objects.create(slug=JUDGE, name="Task completion", scale=Judge.Scale.BINARY, scale_min=0, scale_max=1)
    spec = imported_spec(JUDGE, VERSION)
    version = JudgeVersion.objects.create(judge=judge, version=VERSION, spec=spec, spec_hash=spec_hash(spec))
    sweep = Sweep.objects.create(
        kind=Sweep.Kind.IMPORT,
        name="import of the bench workload",
        dataset=dataset,
        status=Sweep.Status.DONE,
        total_targets=size,
        verdicts_written=size,
        started_at=now,
        finished_at=now,
    )
    sweep.judge_versions.add(version)
    items = 0
    for start in range(0, size, BATCH):
        block = range(start, min(size, start + BATCH))
        with transaction.atomic():
            turns = write_calls(dataset, block, external_id=external_id, language=lambda i: LANGUAGE, messages=messages)
            judged = list(zip(block, turns, strict=True))
            write_verdicts(sweep, version, ((turn, {"passed": judge_passed(i)}) for i, turn in judged))
            GoldLabel.objects.bulk_create(
                GoldLabel(
                    judge=judge,
                    conversation_id=turn.conversation_id,
                    turn=turn,
                    source=GoldLabel.Source.IMPORTED,
                    passed=gold_passed(i),
                )
                for i, turn in judged
            )
            rows = []
            for i, turn in judged:
                if not needs_review(i):
                    continue
                reasons = [r for r, on in (("gold_disagrees", disagrees(i)), ("qa_sample", in_qa_sample(i))) if on]
                rows.append(
                    ReviewItem(
                        judge=judge,
                        conversation_id=turn.conversation_id,
                        turn=turn,
                        dataset=dataset,
                        language=LANGUAGE,
                        reasons=reasons,
                        priority=max(PRIORITY[r] for r in reasons),
                        sample_weight=QA_EVERY if in_qa_sample(i) else 1.0,
                        reviews_required=QA_REVIEWS_REQUIRED if in_qa_sample(i) else 1,
                    )
                )
            ReviewItem.objects.bulk_create(rows)
            items += len(rows)
        if progress and (start // BATCH) % 20 == 19:
            progress(f"  {start + len(block):,} / {size:,} conversations written")

    password = make_password(PASSWORD)
    User = get_user_model()
    users = [User(username=f"bench-reviewer-{n:02d}", password=password) for n in range(reviewers)]
    users.append(User(username="bench-lead", password=password))
    User.objects.bulk_create(users)
    for user in User.objects.filter(username__startswith="bench-"):
        role = Role.LEAD if user.username == "bench-lead" else Role.REVIEWER
        Profile.objects.update_or_create(
            user=user, defaults={"role": role, "languages": [] if role == Role.LEAD else [LANGUAGE]}
        )
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            settle(cursor)
    return {"conversations": size, "turns": size * MESSAGES, "verdicts": size, "gold": size, "items": items}


# The rows of every dataset but the workload's (what the import operation added), children first.
IMPORTED_ROWS_DELETE = (
    "DELETE FROM reviewapp_verdict WHERE conversation_id IN (SELECT c.id FROM reviewapp_conversation c"
    " JOIN reviewapp_dataset d ON d.id = c.dataset_id WHERE d.name <> %s)",
    "DELETE FROM reviewapp_goldlabel WHERE conversation_id IN (SELECT c.id FROM reviewapp_conversation c"
    " JOIN reviewapp_dataset d ON d.id = c.dataset_id WHERE d.name <> %s)",
    "DELETE FROM reviewapp_turn WHERE conversation_id IN (SELECT c.id FROM reviewapp_conversation c"
    " JOIN reviewapp_dataset d ON d.id = c.dataset_id WHERE d.name <> %s)",
    "DELETE FROM reviewapp_conversation WHERE id IN (SELECT c.id FROM reviewapp_conversation c"
    " JOIN reviewapp_dataset d ON d.id = c.dataset_id WHERE d.name <> %s)",
    "DELETE FROM reviewapp_sweep_judge_versions WHERE sweep_id IN (SELECT s.id FROM reviewapp_sweep s"
    " JOIN reviewapp_dataset d ON d.id = s.dataset_id WHERE d.name <> %s)",
    "DELETE FROM reviewapp_sweep WHERE id IN (SELECT s.id FROM reviewapp_sweep s"
    " JOIN reviewapp_dataset d ON d.id = s.dataset_id WHERE d.name <> %s)",
)


def reset_tribunal(size: int) -> bool:
    """Put a database built by build_tribunal(size) back as it was built; False when it holds another size.

    Undoes what the operations wrote: reviews, skips, comments, gold labels from reviews, claims, and the
    datasets an import operation added (deleted in SQL, child tables first: a cascade through the ORM
    would read every imported turn first).
    """
    from django.db import connection, transaction

    from reviewapp.models import Comment, Conversation, Dataset, GoldLabel, Review, ReviewItem, ReviewSkip

    if Conversation.objects.filter(dataset__name=DATASET).count() != size:
        return False
    imported = Dataset.objects.exclude(name=DATASET).exists()
    with transaction.atomic():
        Review.objects.all().delete()
        ReviewSkip.objects.all().delete()
        Comment.objects.all().delete()
        GoldLabel.objects.exclude(source=GoldLabel.Source.IMPORTED).delete()
        ReviewItem.objects.exclude(status=ReviewItem.Status.OPEN, claimed_by=None).update(
            status=ReviewItem.Status.OPEN, claimed_by=None, lease_expires_at=None
        )
        if imported:
            with connection.cursor() as cursor:
                for statement in IMPORTED_ROWS_DELETE:
                    cursor.execute(statement, [DATASET])
            Dataset.objects.exclude(name=DATASET).delete()
    if imported and connection.vendor == "postgresql":
        # What autovacuum does within a minute of deleting an import's 900,000 turns. Without it the
        # planner, looking up the ends of the turn and conversation indexes for its join estimates,
        # walks every dead entry: the queue's item query took 8 ms to plan instead of 1.6 ms.
        with connection.cursor() as cursor:
            settle(cursor)
    return True
