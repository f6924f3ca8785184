"""Do the judge-quality pages stay fast and at a fixed number of queries as the data grows? Builds (or
reuses) bench/review_queue.py's workload and prints, per quality page, the median time, this process's
CPU time and the queries it ran, as a lead through Django's test client (in-process: views, templates,
SQL).

    createdb -U postgres -h 127.0.0.1 tribunal_q1m
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/tribunal_q1m DJANGO_DEBUG=false \\
        .venv/bin/python bench/quality_pages.py --judged 111112 --reuse           # ~1M turns
    ... --mixture        # first add the mixture below (PostgreSQL only; once, kept with --reuse)
    ... --profile        # also list each page's queries with their times
    ... --cprofile PAGE  # and the Python profile of one page (index, judge, coverage, plan)
    ... --html DIR       # write each page's HTML to DIR, to diff the figures of two versions of the code

The workload is review_queue.py's: --judged conversations of 9 messages whose last agent turn carries
one imported verdict of the ordinal judge `conciseness` (version "bench"; a third unresolved) and one
imported gold label, every judged turn queued (a third a QA sample).

`--mixture` adds what a judge's life leaves behind, on the same turns: a second import version; a third
version drafted from corrections (its provenance leaves 500 targets out of its gold) swept three times
over the same targets (some runs unresolved or failed, so runs disagree); unanimous gold on every 11th
target, adjudicated gold on every 17th, an excluded adjudication on every 23rd; and a binary judge whose
gold is given as passed, as a rating (a conversion) or as a label, with some refused, and with review
items on half the targets. Use a copy of the plain database for it (`createdb -T tribunal_q1m
tribunal_q1mix`), so the plain figures stay comparable.

Each figure is the median of --repeats views; the pages keep no cache, so every view computes its
figures from the database. "This process's CPU" is the time the bench process itself spent (views,
templates, the ORM; not PostgreSQL's server time): on a shared machine it tells the code's cost apart
from waiting for the CPU.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

MIX_VERSIONS = ("bench-mix-1", "bench-mix-2")
BINARY_JUDGE = "bench-pass"
EXCLUDED_TARGETS = 500


def add_mixture() -> None:
    """The mixture, written by SQL over the judged turns (a few seconds per 100k targets)."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from bench.review_queue import BENCH_DATASET
    from reviewapp.models import Judge, JudgeVersion, Sweep, VersionProvenance

    judge = Judge.objects.get(slug="conciseness")
    base = JudgeVersion.objects.get(judge=judge, version="bench")
    with transaction.atomic(), connection.cursor() as cursor:
        dataset_id = base.verdicts.values_list("sweep__dataset_id", flat=True).first()
        first = JudgeVersion.objects.create(
            judge=judge, version=MIX_VERSIONS[0], spec={"slug": "conciseness"}, spec_hash="bench-mix-1"
        )
        second = JudgeVersion.objects.create(
            judge=judge,
            version=MIX_VERSIONS[1],
            spec={"slug": "conciseness", "pass_threshold": 3},
            spec_hash="bench-mix-2",
        )
        imported = Sweep.objects.create(kind=Sweep.Kind.IMPORT, dataset_id=dataset_id, status=Sweep.Status.DONE)
        swept = Sweep.objects.create(dataset_id=dataset_id, status=Sweep.Status.DONE, repeats=3)
        insert = (
            "INSERT INTO reviewapp_verdict (sweep_id, judge_version_id, conversation_id, turn_id, run_index, tier,"
            " status, rating, label, passed, flags, sub_scores, explanation, raw_text, problem_code, metadata,"
            " created_at)"
        )
        # Ratings move with the conversation id and the run, apart from its language, so versions and runs disagree.
        cursor.execute(
            insert + " SELECT %s, %s, conversation_id, turn_id, 0, 'imported',"  # noqa: S608 (constants only)
            " CASE WHEN conversation_id %% 9 = 4 THEN 'unresolved' ELSE 'resolved' END,"
            " CASE WHEN conversation_id %% 9 = 4 THEN NULL ELSE 1 + conversation_id %% 3 END, '', NULL,"
            " '[]', '{}', 'Short enough.', '', '', '{}', now()"
            " FROM reviewapp_verdict WHERE judge_version_id = %s",
            [imported.pk, first.pk, base.pk],
        )
        cursor.execute(
            insert + " SELECT %s, %s, conversation_id, turn_id, run, 'llm',"  # noqa: S608
            " CASE WHEN (conversation_id + run) %% 31 = 0 THEN 'error'"
            " WHEN (conversation_id + run) %% 13 = 0 THEN 'unresolved' ELSE 'resolved' END,"
            " CASE WHEN (conversation_id + run) %% 31 = 0 OR (conversation_id + run) %% 13 = 0 THEN NULL"
            " WHEN (conversation_id * 37 %% 97 + run) %% 6 = 0 THEN 1 + (conversation_id * 37 %% 97 + 1) %% 3"
            " ELSE 1 + conversation_id * 37 %% 97 %% 3 END, '', NULL,"
            " CASE WHEN conversation_id %% 4 = 0 THEN '[\"gloss\"]' ELSE '[]' END::jsonb, '{}',"
            " 'Run ' || run, '', '', '{}', now()"
            " FROM reviewapp_verdict, generate_series(0, 2) AS run WHERE judge_version_id = %s",
            [swept.pk, second.pk, base.pk],
        )
        cursor.execute(
            "INSERT INTO reviewapp_goldlabel (judge_id, conversation_id, turn_id, source, rating, label, passed,"
            " failure_modes, excluded, metadata, created_at)"
            " SELECT g.judge_id, g.conversation_id, g.turn_id, s.source, 1 + (g.conversation_id + s.shift) %% 3,"
            " '', NULL, CASE WHEN s.source = 'adjudicated' THEN '[\"gloss\"]' ELSE '[]' END::jsonb,"
            " s.every = 23, '{}', now()"
            " FROM reviewapp_goldlabel g, (VALUES ('unanimous', 11, 1), ('adjudicated', 17, 2),"
            " ('adjudicated', 23, 0)) AS s(source, every, shift)"
            " WHERE g.judge_id = %s AND g.source = 'imported' AND g.conversation_id %% s.every = 0"
            " AND NOT (s.every = 23 AND g.conversation_id %% 17 = 0) ON CONFLICT DO NOTHING",
            [judge.pk],
        )
        lead = get_user_model().objects.get(username="bench-lead")
        excluded = list(
            base.verdicts.order_by("conversation_id").values_list("conversation_id", "turn_id")[:EXCLUDED_TARGETS]
        )
        VersionProvenance.objects.create(
            version=second, parent=first, approved_by=lead, excluded=[list(t) for t in excluded]
        )

        binary = Judge.objects.create(slug=BINARY_JUDGE, scale=Judge.Scale.BINARY, scale_min=0, scale_max=1)
        version = JudgeVersion.objects.create(
            judge=binary, version="v1", spec={"slug": BINARY_JUDGE}, spec_hash=BINARY_JUDGE
        )
        sweep = Sweep.objects.create(kind=Sweep.Kind.IMPORT, dataset_id=dataset_id, status=Sweep.Status.DONE)
        cursor.execute(
            insert + " SELECT %s, %s, conversation_id, turn_id, 0, 'imported',"  # noqa: S608
            " CASE WHEN conversation_id %% 19 = 0 THEN 'unresolved' ELSE 'resolved' END, NULL, '',"
            " CASE WHEN conversation_id %% 19 = 0 THEN NULL ELSE conversation_id %% 4 > 0 END,"
            " '[]', '{}', '', '', '', '{}', now()"
            " FROM reviewapp_verdict WHERE judge_version_id = %s",
            [sweep.pk, version.pk, base.pk],
        )
        # Gold as passed, as a rating (converted through the threshold), as a label, or refused (a rating of 0.5).
        cursor.execute(
            "INSERT INTO reviewapp_goldlabel (judge_id, conversation_id, turn_id, source, rating, label, passed,"
            " failure_modes, excluded, metadata, created_at)"
            " SELECT %s, conversation_id, turn_id, 'imported',"
            " CASE WHEN conversation_id %% 7 = 0 THEN (conversation_id %% 2)::float"
            " WHEN conversation_id %% 101 = 0 THEN 0.5 END,"
            " CASE WHEN conversation_id %% 13 = 0 AND conversation_id %% 7 <> 0 THEN 'Pass' ELSE '' END,"
            " CASE WHEN conversation_id %% 7 <> 0 AND conversation_id %% 13 <> 0 AND conversation_id %% 101 <> 0"
            " THEN conversation_id %% 3 > 0 END, '[]', false, '{}', now()"
            " FROM reviewapp_goldlabel WHERE judge_id = %s AND source = 'imported'",
            [binary.pk, judge.pk],
        )
        cursor.execute(
            "INSERT INTO reviewapp_reviewitem (judge_id, conversation_id, turn_id, dataset_id, language, reasons,"
            " priority, plan_term, sample_weight, status, reviews_required, lead_note, created_at, updated_at)"
            " SELECT %s, i.conversation_id, i.turn_id, i.dataset_id, i.language, i.reasons, i.priority, 0,"
            " i.sample_weight, 'open', i.reviews_required, '', now(), now()"
            " FROM reviewapp_reviewitem i JOIN reviewapp_dataset d ON d.id = i.dataset_id"
            " WHERE i.judge_id = %s AND d.name = %s AND i.conversation_id %% 2 = 0",
            [binary.pk, judge.pk, BENCH_DATASET],
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judged", type=int, default=100_000, help="judged turns (= conversations = items)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--reuse", action="store_true", help="keep the data of an earlier run when its size matches")
    parser.add_argument("--mixture", action="store_true", help="add the mixture of versions, runs and gold")
    parser.add_argument("--profile", action="store_true", help="list each page's queries with their times")
    parser.add_argument("--cprofile", choices=("index", "judge", "coverage", "plan"), help="profile one page")
    parser.add_argument("--html", type=Path, help="write each page's HTML into this folder")
    args = parser.parse_args()
    from bench.review_queue import BENCH_DATASET, build, migrated, reset_people

    migrated(reuse=args.reuse)
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from reviewapp.models import JudgeVersion, ReviewItem, Turn

    started = time.perf_counter()
    if not (
        args.reuse
        and ReviewItem.objects.filter(dataset__name=BENCH_DATASET, judge__slug="conciseness").count() == args.judged
    ):
        build(args.judged)
    _, lead = reset_people()
    if args.mixture and not JudgeVersion.objects.filter(version=MIX_VERSIONS[0]).exists():
        if connection.vendor != "postgresql":
            sys.exit("--mixture is written in PostgreSQL's SQL")
        add_mixture()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
    print(
        f"{connection.vendor}: {ReviewItem.objects.count()} items, {Turn.objects.count()} turns, "
        f"{JudgeVersion.objects.count()} judge versions, ready in {time.perf_counter() - started:.1f} s"
    )
    client = Client()
    client.force_login(lead)
    pages = {
        "index": reverse("quality_index"),
        "judge": reverse("quality_judge", args=["conciseness"]),
        "coverage": reverse("coverage_page", args=["conciseness"]),
        "plan": reverse("plan_page", args=["conciseness"]),
    }
    if args.html:
        args.html.mkdir(parents=True, exist_ok=True)
    for name, url in pages.items():
        samples, cpu, counts = [], [], set()
        for _ in range(args.repeats):
            with CaptureQueriesContext(connection) as queries:
                start, start_cpu = time.perf_counter(), time.process_time()
                response = client.get(url)
                samples.append((time.perf_counter() - start) * 1000)
                cpu.append((time.process_time() - start_cpu) * 1000)
            assert response.status_code == 200, (url, response.status_code)
            counts.add(len(queries))
        shown = "/".join(str(c) for c in sorted(counts))
        print(
            f"{name + ' ' + url:<40} median {statistics.median(samples):7.1f} ms  max {max(samples):7.1f} ms  "
            f"this process's CPU {statistics.median(cpu):7.1f} ms  {shown:>5} queries"
        )
        if args.profile:
            for query in queries.captured_queries:
                print(f"    {float(query['time']) * 1000:7.2f} ms  {' '.join(query['sql'].split())[:160]}")
        if args.html:
            (args.html / f"{name}.html").write_bytes(response.content)
        if args.cprofile == name:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.runcall(client.get, url)
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()
