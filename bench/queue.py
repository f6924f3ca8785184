"""Is the queue fast with 100k open items? Times the queue page and the next-item claim, and shows
PostgreSQL's plan for the claim query (it should use the item_queue index).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/tribunal_bench .venv/bin/python bench/queue.py
    .venv/bin/python bench/queue.py --items 20000          # SQLite file under var/ when DATABASE_URL is unset

The database is migrated first and the bench dataset (and its items) replaced. Each figure is the
median of --repeats requests through Django's test client, as a logged-in reviewer of one language
(fr) in a queue holding several languages.
"""

import sys
from pathlib import Path

# This file is named like the standard library's `queue`: keep its folder off the import path.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

BENCH_DATASET = "bench-queue"
LANGUAGES = ["fr", "fr-CA", "de", "ja", "hi"]
REASONS = [["unresolved"], ["qa_sample"], ["imported"], ["runs_disagree", "qa_sample"], ["judges_disagree"]]


def setup_database(items: int) -> None:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from reviewapp.models import Conversation, Dataset, Judge, Profile, ReviewItem, Role, Turn

    call_command("migrate", verbosity=0)
    Dataset.objects.filter(name=BENCH_DATASET).delete()
    dataset = Dataset.objects.create(name=BENCH_DATASET, kind=Dataset.Kind.REVIEW)
    judge, _ = Judge.objects.get_or_create(
        slug="conciseness", defaults={"scale": Judge.Scale.ORDINAL, "scale_min": 1, "scale_max": 3}
    )
    per_conversation = 20
    conversations = Conversation.objects.bulk_create(
        Conversation(dataset=dataset, external_id=f"bench-{c:06d}", language=LANGUAGES[c % len(LANGUAGES)])
        for c in range(items // per_conversation)
    )
    Turn.objects.bulk_create(
        (
            Turn(conversation=c, position=p, role="agent", text=f"Synthetic agent turn {p} of {c.external_id}.")
            for c in conversations
            for p in range(per_conversation)
        ),
        batch_size=5000,
    )
    turns = Turn.objects.filter(conversation__dataset=dataset).values_list(
        "pk", "conversation_id", "conversation__language"
    )
    ReviewItem.objects.bulk_create(
        (
            ReviewItem(
                judge=judge,
                conversation_id=conversation_id,
                turn_id=turn_id,
                dataset=dataset,
                language=language,
                reasons=REASONS[turn_id % len(REASONS)],
                priority=(100, 200, 250, 300)[turn_id % 4],
            )
            for turn_id, conversation_id, language in turns.iterator(chunk_size=5000)
        ),
        batch_size=5000,
    )
    user, _ = get_user_model().objects.get_or_create(username="bench-reviewer")
    Profile.objects.update_or_create(user=user, defaults={"role": Role.REVIEWER, "languages": ["fr"]})


def timed(call, repeats: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples), max(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--reuse", action="store_true", help="keep the items of an earlier run when the count matches")
    parser.add_argument("--profile", action="store_true", help="print each query of one queue page and its time")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL"):
        (ROOT / "var").mkdir(exist_ok=True)
        database = ROOT / "var" / "bench_queue.sqlite3"
        database.unlink(missing_ok=True)
        os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewapp.settings")
    os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse
    from django.utils import timezone

    from reviewapp.models import ReviewItem
    from reviewapp.selectors.queue import claim_candidate_ids, claim_candidates

    started = time.perf_counter()
    if not (args.reuse and ReviewItem.objects.filter(dataset__name=BENCH_DATASET).count() == args.items):
        setup_database(args.items)
    print(
        f"database: {connection.vendor}; {ReviewItem.objects.count()} items created in {time.perf_counter() - started:.1f} s"
    )
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE reviewapp_reviewitem")

    user = get_user_model().objects.get(username="bench-reviewer")
    client = Client()
    client.force_login(user)

    def queue_page():
        assert client.get(reverse("queue_index")).status_code == 200

    def next_item():
        # Claim, then give the item back by skipping it, so every request claims a fresh item.
        response = client.post(reverse("queue_next"))
        assert response.status_code == 302 and "/review/" in response.url, response.url
        item_id = int(response.url.rstrip("/").rsplit("/", 1)[1])
        client.post(reverse("review_skip", args=[item_id]), {"reason": "bench"})

    def claim_only():
        response = client.post(reverse("queue_next"))
        assert response.status_code == 302

    with CaptureQueriesContext(connection) as queries:
        queue_page()
    print(f"queue page: {len(queries)} queries")
    if args.profile:
        for query in queries.captured_queries:
            print(f"  {float(query['time']) * 1000:8.1f} ms  {query['sql'][:160]}")
    median, worst = timed(queue_page, args.repeats)
    print(f"queue page: median {median:.1f} ms, max {worst:.1f} ms over {args.repeats} requests")
    with CaptureQueriesContext(connection) as queries:
        claim_only()
    print(f"next item (claim): {len(queries)} queries")
    median, worst = timed(next_item, args.repeats)
    print(f"next item, claim + skip: median {median:.1f} ms, max {worst:.1f} ms over {args.repeats} requests")

    if connection.vendor == "postgresql":
        from django.db import transaction

        with transaction.atomic():
            now = timezone.now()
            part = claim_candidates(user=user, filters=None, now=now).filter(status="open", language="fr")[:10]
            print("\nEXPLAIN ANALYZE of one index walk of the claim (status open, language fr, first 10):")
            print(part.explain(analyze=True))
            started = time.perf_counter()
            ids = claim_candidate_ids(user=user, filters=None, now=now, limit=10)
            print(
                f"all walks (UNION ALL over statuses x languages): {(time.perf_counter() - started) * 1000:.1f} ms, ids {ids[:3]}..."
            )


if __name__ == "__main__":
    main()
