"""Do the queue, the review screen, claim and submit stay fast and at a fixed number of queries as the
data grows? Builds N judged turns and prints, per operation, the median time and the queries it ran.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/tribunal_bench_queue .venv/bin/python bench/review_queue.py
    DATABASE_URL=... .venv/bin/python bench/review_queue.py --judged 111112 --reuse   # ~1M turns; keep the data
    .venv/bin/python bench/review_queue.py --judged 20000    # SQLite file under var/ when DATABASE_URL is unset
    ... --profile    # also list each query of each operation with its time, and PostgreSQL's plans

The workload: --judged conversations of 9 messages (user and agent turns, the last agent turn judged by
an imported verdict with an imported gold label), every judged turn queued for review: a third because
the judge differs from gold, a third unresolved, a third a QA sample needing two reviews; five
languages. Use a database of its own: it is migrated first and the bench dataset replaced (kept with
--reuse when its size matches). Each figure is the median of --repeats requests through Django's test
client (in-process: views, templates, SQL), as a reviewer of fr (fr and fr-CA: 40% of the items) and as
a lead; the query counts include the request's session read (with its user and profile) (and a write's
BEGIN and COMMIT). "This process's CPU" is the time the bench process itself spent (views, templates, the
ORM; on SQLite the SQL too, not PostgreSQL's server time): on a shared machine it tells the code's
cost apart from waiting for the CPU.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

from bench import _workload as workload  # noqa: E402

BENCH_DATASET = "bench-queue"
LANGUAGES = ["fr", "fr-CA", "de", "ja", "hi"]


def external_id(c: int) -> str:
    return f"bench-{c:07d}"


def language(c: int) -> str:
    return LANGUAGES[c % len(LANGUAGES)]


def messages(c: int) -> list[tuple[str, str]]:
    """Conversation c's messages, the agent's first and last."""
    return [
        ("user" if p % 2 else "agent", f"Message {p} of {external_id(c)}: the flight leaves at 9:40 from gate 12.")
        for p in range(workload.MESSAGES)
    ]


def verdict_fields(n: int) -> dict:
    """Judged turn n's imported verdict: a third unresolved, the others rated 3 or 2."""
    if n % 3 == 1:
        return {"status": "unresolved", "rating": None, "explanation": "Long for speech."}
    return {"rating": 3 if n % 3 == 0 else 2, "explanation": "Long for speech."}


def build(judged: int) -> None:
    """The workload, with bulk inserts (the queue counts follow through their triggers)."""
    from django.db import transaction

    from reviewapp.models import Dataset, GoldLabel, Judge, JudgeVersion, ReviewItem, Sweep

    Dataset.objects.filter(name=BENCH_DATASET).delete()
    judge, _ = Judge.objects.get_or_create(
        slug="conciseness", defaults={"scale": Judge.Scale.ORDINAL, "scale_min": 1, "scale_max": 3}
    )
    version, _ = JudgeVersion.objects.get_or_create(
        judge=judge, version="bench", defaults={"spec": {"slug": "conciseness"}, "spec_hash": "bench-conciseness"}
    )
    with transaction.atomic():
        dataset = Dataset.objects.create(name=BENCH_DATASET, kind=Dataset.Kind.REVIEW, blind_review=False)
        sweep = Sweep.objects.create(kind=Sweep.Kind.IMPORT, dataset=dataset, status=Sweep.Status.DONE)
        for start in range(0, judged, workload.BATCH):
            block = range(start, min(judged, start + workload.BATCH))
            last = workload.write_calls(dataset, block, external_id=external_id, language=language, messages=messages)
            workload.write_verdicts(sweep, version, ((t, verdict_fields(n)) for n, t in enumerate(last, start)))
            GoldLabel.objects.bulk_create(
                GoldLabel(judge=judge, conversation=t.conversation, turn=t, source=GoldLabel.Source.IMPORTED, rating=2)
                for t in last
            )
            ReviewItem.objects.bulk_create(
                ReviewItem(
                    judge=judge,
                    conversation=t.conversation,
                    turn=t,
                    dataset=dataset,
                    language=t.conversation.language,
                    reasons=[("gold_disagrees", "unresolved", "qa_sample")[n % 3]],
                    priority=(250, 300, 100)[n % 3],
                    reviews_required=2 if n % 3 == 2 else 1,
                )
                for n, t in enumerate(last, start)
            )


def reset_people():
    """A reviewer of fr (fr and fr-CA) and a lead; no review, skip or claim left from an earlier run."""
    from django.contrib.auth import get_user_model

    from reviewapp.models import AuditEvent, Comment, Profile, Review, ReviewItem, ReviewSkip, Role

    user, _ = get_user_model().objects.get_or_create(username="bench-reviewer")
    Profile.objects.update_or_create(user=user, defaults={"role": Role.REVIEWER, "languages": ["fr"]})
    lead, _ = get_user_model().objects.get_or_create(username="bench-lead")
    Profile.objects.update_or_create(user=lead, defaults={"role": Role.LEAD, "languages": []})
    ReviewSkip.objects.filter(item__dataset__name=BENCH_DATASET).delete()
    Review.objects.filter(item__dataset__name=BENCH_DATASET).delete()
    Comment.objects.filter(author=user).delete()
    AuditEvent.objects.filter(actor__in=[user, lead]).delete()
    ReviewItem.objects.filter(dataset__name=BENCH_DATASET).exclude(status="open", claimed_by=None).update(
        status="open", claimed_by=None, lease_expires_at=None
    )
    return user, lead


def migrated(*, reuse: bool) -> None:
    """Django set up on DATABASE_URL (else a SQLite file under var/, new unless `reuse`), migrated."""
    if not os.environ.get("DATABASE_URL"):
        (ROOT / "var").mkdir(exist_ok=True)
        database = ROOT / "var" / "bench_queue.sqlite3"
        if not reuse:
            database.unlink(missing_ok=True)
        os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewapp.settings")
    os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judged", type=int, default=100_000, help="judged turns (= conversations = items)")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--labels", type=int, default=200, help="labels the reviewer gives before 'after labels'")
    parser.add_argument("--reuse", action="store_true", help="keep the data of an earlier run when its size matches")
    parser.add_argument("--profile", action="store_true", help="list each operation's queries with their times")
    args = parser.parse_args()
    migrated(reuse=args.reuse)
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from reviewapp.models import ReviewItem, Turn

    started = time.perf_counter()
    if not (args.reuse and ReviewItem.objects.filter(dataset__name=BENCH_DATASET).count() == args.judged):
        build(args.judged)
    user, lead = reset_people()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")  # what autovacuum does soon after a bulk load
    else:
        from reviewapp import planner_statistics

        # What an import and a triage do once they commit (the build writes its rows directly).
        planner_statistics.analyze([model._meta.db_table for model in planner_statistics.BULK])
    print(
        f"{connection.vendor}: {ReviewItem.objects.count()} items, {Turn.objects.count()} turns, "
        f"ready in {time.perf_counter() - started:.1f} s"
    )

    reviewer, lead_client = Client(), Client()
    reviewer.force_login(user)
    lead_client.force_login(lead)
    queue = reverse("queue_index")
    mine = ReviewItem.objects.filter(dataset__name=BENCH_DATASET, language__in=["fr", "fr-CA"], status="open")
    middle = mine.order_by("-priority", "id").values_list("priority", "pk")[mine.count() // 2]

    def held_item_id() -> int:
        response = reviewer.post(reverse("queue_next"))
        assert response.status_code == 302 and "/review/" in response.url, response.url
        return int(response.url.rstrip("/").rsplit("/", 1)[1])

    def submit(item_id: int) -> None:
        response = reviewer.post(reverse("review_item", args=[item_id]), {"rating": "2"})
        assert response.status_code == 302, (response.status_code, response.content[:500])

    def report(label: str, call, *, prepare=None) -> None:
        samples, cpu, counts = [], [], set()
        for _ in range(args.repeats):
            argument = prepare() if prepare else None
            with CaptureQueriesContext(connection) as queries:
                start, start_cpu = time.perf_counter(), time.process_time()
                call(argument) if prepare else call()
                samples.append((time.perf_counter() - start) * 1000)
                cpu.append((time.process_time() - start_cpu) * 1000)
            counts.add(len(queries))
        median = statistics.median(samples)
        shown = "/".join(str(c) for c in sorted(counts))
        print(
            f"{label:<46} median {median:6.1f} ms  max {max(samples):6.1f} ms  "
            f"this process's CPU {statistics.median(cpu):5.1f} ms  {shown:>5} queries"
        )
        if args.profile:
            for query in queries.captured_queries:
                print(f"    {float(query['time']) * 1000:7.2f} ms  {' '.join(query['sql'].split())[:160]}")

    def get(client, params=None, **extra):
        return lambda: client.get(queue, params or {}, **extra).status_code == 200 or sys.exit("queue page failed")

    report("queue page (reviewer, fr)", get(reviewer))
    report("queue page, a middle page (keyset)", get(reviewer, {"after": f"{middle[0]}:{middle[1]}"}))
    report("queue page, filtered (judge differs from gold)", get(reviewer, {"reason": "gold_disagrees"}))
    report("queue page, htmx fragment", get(reviewer, HTTP_HX_REQUEST="true"))
    report("queue page (lead, all languages)", get(lead_client))
    report("review screen", lambda item_id: reviewer.get(reverse("review_item", args=[item_id])), prepare=held_item_id)
    report("next item (claim)", lambda _: held_item_id(), prepare=lambda: reset_claim(user))
    report("submit a label (and claim the next)", submit, prepare=held_item_id)
    for _ in range(args.labels):
        submit(held_item_id())
    report(f"queue page after {args.labels + args.repeats} labels", get(reviewer))
    report("next item after labels (claim)", lambda _: held_item_id(), prepare=lambda: reset_claim(user))
    report("submit after labels", submit, prepare=held_item_id)


def reset_claim(user) -> None:
    """Give back the reviewer's held item (untimed), so the timed request claims a fresh one."""
    from django.utils import timezone

    from reviewapp.review.services import reviews
    from reviewapp.triage.selectors.claims import held_item

    held = held_item(user=user, now=timezone.now())
    if held is not None:
        reviews.item_skip(item=held, user=user, reason="bench")


if __name__ == "__main__":
    main()
