"""Is the queue fast with 100k open items? Times the queue page and the next-item claim, and shows
PostgreSQL's plans for the page's top list, its counts and the claim (index scans, never a Seq Scan
on the items).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/tribunal_bench_queue .venv/bin/python bench/review_queue.py
    DATABASE_URL=... .venv/bin/python bench/review_queue.py --reuse --profile   # keep the items, list each query
    .venv/bin/python bench/review_queue.py --items 20000          # SQLite file under var/ when DATABASE_URL is unset

Use a database of its own: it is migrated first and the bench dataset (and its items) replaced. Each
figure is the median of --repeats requests through Django's test client, as a logged-in reviewer of
one language (fr, which covers fr and fr-CA: 40% of the items) in a queue holding five languages,
and as a lead who sees all of them.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

BENCH_DATASET = "bench-queue"
LANGUAGES = ["fr", "fr-CA", "de", "ja", "hi"]
REASONS = [["unresolved"], ["qa_sample"], ["imported"], ["runs_disagree", "qa_sample"], ["judges_disagree"]]


def setup_database(items: int) -> None:
    from reviewapp.models import Conversation, Dataset, Judge, ReviewItem, Turn

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


def setup_people() -> None:
    """A reviewer of fr (fr and fr-CA) and a lead, with no review or skip left from an earlier run."""
    from django.contrib.auth import get_user_model

    from reviewapp.models import Profile, Review, ReviewItem, ReviewSkip, Role

    user, _ = get_user_model().objects.get_or_create(username="bench-reviewer")
    Profile.objects.update_or_create(user=user, defaults={"role": Role.REVIEWER, "languages": ["fr"]})
    lead, _ = get_user_model().objects.get_or_create(username="bench-lead")
    Profile.objects.update_or_create(user=lead, defaults={"role": Role.LEAD, "languages": []})
    ReviewSkip.objects.filter(item__dataset__name=BENCH_DATASET).delete()
    Review.objects.filter(item__dataset__name=BENCH_DATASET).delete()
    ReviewItem.objects.filter(dataset__name=BENCH_DATASET).exclude(status="open").update(
        status="open", claimed_by=None, lease_expires_at=None
    )


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
    parser.add_argument(
        "--profile", action="store_true", help="print each query (page, claim, skip) with its time, and the full plans"
    )
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
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse
    from django.utils import timezone

    from reviewapp.models import ReviewItem
    from reviewapp.selectors.queue import (
        ACTIVE,
        QueueFilters,
        claim_candidates,
        count_rows,
        held_item,
        review_languages,
        top_items,
        walked,
    )
    from reviewapp.services import reviews

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    if not (args.reuse and ReviewItem.objects.filter(dataset__name=BENCH_DATASET).count() == args.items):
        setup_database(args.items)
    setup_people()
    print(
        f"database: {connection.vendor}; {ReviewItem.objects.count()} items ready in {time.perf_counter() - started:.1f} s"
    )
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # What autovacuum does soon after a bulk load: statistics, and the visibility map that lets
            # the counts read the partial index alone.
            cursor.execute("VACUUM ANALYZE reviewapp_reviewitem")

    User = get_user_model()
    user = User.objects.get(username="bench-reviewer")
    client = Client()
    client.force_login(user)
    lead_client = Client()
    lead_client.force_login(User.objects.get(username="bench-lead"))

    def queue_page(as_client=client):
        assert as_client.get(reverse("queue_index")).status_code == 200

    skip_times = []

    def next_item():
        # Claim (or resume), then skip, which gives the item back and claims the next one: a fresh
        # claim every time, the way a reviewer moves through the queue.
        response = client.post(reverse("queue_next"))
        assert response.status_code == 302 and "/review/" in response.url, response.url
        item_id = int(response.url.rstrip("/").rsplit("/", 1)[1])
        started = time.perf_counter()
        response = client.post(reverse("review_skip", args=[item_id]), {"reason": "bench"})
        skip_times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 302 and "/review/" in response.url, response.url

    def show_queries(label, queries):
        print(f"{label}: {len(queries)} queries")
        if args.profile:
            for query in queries.captured_queries:
                sql = " ".join(query["sql"].split())
                print(f"  {float(query['time']) * 1000:8.1f} ms  {sql[:150]}")

    with CaptureQueriesContext(connection) as queries:
        queue_page()
    show_queries("queue page (reviewer)", queries)
    median, worst = timed(queue_page, args.repeats)
    print(f"queue page (reviewer, fr): median {median:.1f} ms, max {worst:.1f} ms over {args.repeats} requests")
    with CaptureQueriesContext(connection) as queries:
        queue_page(lead_client)
    show_queries("queue page (lead)", queries)
    median, worst = timed(lambda: queue_page(lead_client), args.repeats)
    print(f"queue page (lead, all languages): median {median:.1f} ms, max {worst:.1f} ms over {args.repeats} requests")

    with CaptureQueriesContext(connection) as queries:
        response = client.post(reverse("queue_next"))
        assert response.status_code == 302
    show_queries("next item (claim)", queries)
    item_id = int(response.url.rstrip("/").rsplit("/", 1)[1])
    with CaptureQueriesContext(connection) as queries:
        client.post(reverse("review_skip", args=[item_id]), {"reason": "bench"})
    show_queries("skip (skip + claim of the next)", queries)
    median, worst = timed(next_item, args.repeats)
    print(f"next item, claim + skip: median {median:.1f} ms, max {worst:.1f} ms over {args.repeats} requests")
    print(f"  of which the skip request (skip + claim of the next): median {statistics.median(skip_times):.1f} ms")

    claim_times = []
    for _ in range(args.repeats):
        held = held_item(user=user, now=timezone.now())
        if held is not None:  # given back outside the timing, so the request below claims a fresh item
            reviews.item_skip(item=held, user=user, reason="bench")
        started = time.perf_counter()
        response = client.post(reverse("queue_next"))
        claim_times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 302 and "/review/" in response.url, response.url
    print(
        f"next item, the claim request alone: median {statistics.median(claim_times):.1f} ms, "
        f"max {max(claim_times):.1f} ms over {args.repeats} requests"
    )

    if connection.vendor == "postgresql":
        from django.db import transaction

        def plan(title, queryset):
            text = queryset.explain(analyze=True)
            scans = sorted(
                {
                    re.sub(r' "\w+"$', "", line.split("->")[-1].split("  (")[0].strip())
                    for line in text.splitlines()
                    if " Scan " in line and "Subquery Scan" not in line
                }
            )
            seq = "Seq Scan on reviewapp_reviewitem" in text
            print(f"\nEXPLAIN ANALYZE, {title}: {'SEQ SCAN on the items' if seq else 'no seq scan on the items'}")
            print("  scans: " + "; ".join(scans))
            if args.profile:
                print(text)

        languages = review_languages(user=user)
        plan("the queue page's top 50", top_items(user=user, filters=QueueFilters(), languages=languages))
        plan("the queue page's counts", count_rows(user=user, languages=languages, statuses=ACTIVE))
        with transaction.atomic():
            now = timezone.now()
            candidates = claim_candidates(user=user, filters=None, now=now, languages=languages)
            plan("the claim's first 10", walked(candidates, statuses=ACTIVE, languages=languages, limit=10))


if __name__ == "__main__":
    main()
