"""Sweep scope: re-score what reviewers commented on, the gold-labelled targets, or what moved between two
versions, from the service, the command line, the API and the sweep form."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from reviewapp.judging.services import sweep_scope
from reviewapp.judging.services.sweeps import SweepError
from reviewapp.models import Category, Comment, GoldLabel, Sweep, Turn, Verdict
from reviewapp.people.services.api_tokens import READ_SWEEPS, RUN_SWEEPS, api_token_create
from tests.factories import dataset_of_calls, store_judge

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus():
    return dataset_of_calls(
        "scoped",
        {
            "c1": ("en", ["One [[r=3]]", "Two [[r=2]]"]),
            "c2": ("en", ["Three [[r=1]]"]),
            "c3": ("fr", ["Quatre [[r=3]]", "Cinq [[r=3]]"]),
        },
    )


@pytest.fixture
def judge():
    return store_judge("conciseness")


@pytest.fixture
def comments(corpus, make_user):
    author = make_user("rita", languages=["en", "fr"])
    gloss = Category.objects.create(slug="gloss", name="Gloss")
    by_text = {t.text: t for t in Turn.objects.filter(role="agent")}
    first = Comment.objects.create(turn=by_text["Two [[r=2]]"], author=author, body="a gloss")
    first.categories.add(gloss)
    Comment.objects.create(turn=by_text["Cinq [[r=3]]"], author=author, body="number reading")
    Comment.objects.create(turn=by_text["Cinq [[r=3]]"], author=author, body="second comment, same turn")
    return by_text


def scored(sweep) -> set[str]:
    return set(Verdict.objects.filter(sweep=sweep).values_list("turn__text", flat=True))


def test_commented_scope_rescores_exactly_the_commented_turns_and_a_category_narrows_it(
    corpus, judge, comments, scripted_llm, run_sweep
):
    every = run_sweep(dataset=corpus, judge_versions=[judge], qa_sample=0, scope=sweep_scope.scope_parse("commented"))
    glosses = run_sweep(
        dataset=corpus,
        judge_versions=[judge],
        qa_sample=0,
        scope=sweep_scope.scope_parse("commented", category="gloss"),
    )

    assert scored(every) == {"Two [[r=2]]", "Cinq [[r=3]]"} and every.total_targets == 2
    assert scored(glosses) == {"Two [[r=2]]"}
    assert every.params["scope"] == {"kind": "commented"}
    assert glosses.status == Sweep.Status.DONE


def test_a_conversation_level_judge_rescores_the_conversations_holding_a_commented_turn(
    corpus, comments, scripted_llm, run_sweep
):
    import dataclasses

    from reviewapp.judging.services.judges import judge_version_store
    from tests.factories import shipped_spec

    spec = shipped_spec("conciseness")
    conversation_judge = judge_version_store(
        spec=dataclasses.replace(
            spec, slug="call_summary", version="c1", level="conversation", user_template="Rate {conversation_turns}"
        )
    )

    sweep = run_sweep(
        dataset=corpus, judge_versions=[conversation_judge], qa_sample=0, scope=sweep_scope.scope_parse("commented")
    )

    conversations = set(Verdict.objects.filter(sweep=sweep).values_list("conversation__external_id", flat=True))
    assert conversations == {"c1", "c3"}


def test_gold_scope_rescores_the_targets_with_gold_for_the_swept_judge(corpus, judge, scripted_llm, run_sweep):
    one, three = Turn.objects.get(text="One [[r=3]]"), Turn.objects.get(text="Three [[r=1]]")
    for turn in (one, three):
        GoldLabel.objects.create(
            judge=judge.judge, conversation=turn.conversation, turn=turn, source="imported", rating=3
        )
    excluded = Turn.objects.get(text="Quatre [[r=3]]")
    GoldLabel.objects.create(
        judge=judge.judge, conversation=excluded.conversation, turn=excluded, source="imported", rating=2, excluded=True
    )

    sweep = run_sweep(dataset=corpus, judge_versions=[judge], qa_sample=0, scope=sweep_scope.scope_parse("gold"))

    assert scored(sweep) == {"One [[r=3]]", "Three [[r=1]]"}


def test_moved_scope_rescores_the_targets_whose_outcome_differs_between_two_versions(
    corpus, judge, scripted_llm, run_sweep
):
    first = run_sweep(dataset=corpus, judge_versions=[judge], qa_sample=0)
    other = store_judge("conciseness", version="2.0", user_template="{turn_text} v2")
    second = run_sweep(dataset=corpus, judge_versions=[other], qa_sample=0)
    # Both versions agree everywhere except on two turns that 2.0 moves down.
    Verdict.objects.filter(sweep__in=[first, second]).update(rating=3)
    moved_turns = ["Two [[r=2]]", "Quatre [[r=3]]"]
    Verdict.objects.filter(sweep=second, turn__text__in=moved_turns).update(rating=1)

    sweep = run_sweep(
        dataset=corpus, judge_versions=[other], qa_sample=0, scope=sweep_scope.scope_parse("moved:1.0,2.0")
    )

    assert scored(sweep) == set(moved_turns)
    with pytest.raises(SweepError, match=r"has no version 9\.9"):
        run_sweep(dataset=corpus, judge_versions=[other], scope=sweep_scope.scope_parse("moved:1.0,9.9"))


@pytest.mark.parametrize(
    ("text", "category", "problem"),
    [
        ("everything", "", "unknown scope"),
        ("moved:A", "", "moved:A,B"),
        ("gold", "gloss", "commented scope only"),
        ("commented", "no-such", "no category"),
        ("gold:x", "", "only moved takes a value"),
    ],
)
def test_a_scope_that_cannot_be_read_is_refused_with_its_reason(text, category, problem):
    with pytest.raises(sweep_scope.ScopeError, match=problem):
        sweep_scope.scope_parse(text, category=category)


def test_an_empty_scope_is_refused_before_anything_runs(corpus, judge, scripted_llm, run_sweep):
    with pytest.raises(SweepError, match="within scope commented"):
        run_sweep(dataset=corpus, judge_versions=[judge], scope=sweep_scope.scope_parse("commented"))
    assert scripted_llm.calls == []


@pytest.mark.django_db(transaction=True)
def test_the_command_line_takes_scope_and_category(corpus, judge, comments, scripted_llm):
    out = StringIO()
    call_command(
        "sweep",
        "--dataset",
        "scoped",
        "--judge",
        "conciseness",
        "--scope",
        "commented",
        "--category",
        "gloss",
        "--eager",
        "--qa-sample",
        "0",
        stdout=out,
        stderr=StringIO(),
    )
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert result["status"] == "done" and result["verdicts"] == 1
    assert scored(Sweep.objects.get(pk=result["sweep"])) == {"Two [[r=2]]"}
    with pytest.raises(CommandError, match="unknown scope"):
        call_command("sweep", "--dataset", "scoped", "--judge", "conciseness", "--scope", "nope")


def test_the_api_takes_a_scope_field(
    corpus, judge, comments, make_user, scripted_llm, eager_celery, django_capture_on_commit_callbacks
):
    raw = api_token_create(user=make_user("lea", role="lead"), name="ci", scopes=[RUN_SWEEPS, READ_SWEEPS])[1]
    api = Client(enforce_csrf_checks=True)

    def post(body):
        return api.post(
            reverse("api_sweep_create"),
            data=json.dumps(body),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {raw}",
        )

    with django_capture_on_commit_callbacks(execute=True):
        response = post({"dataset": "scoped", "judges": ["conciseness"], "scope": "commented", "qa_sample": 0})
    assert response.status_code == 201
    assert scored(Sweep.objects.get(pk=response.json()["id"])) == {"Two [[r=2]]", "Cinq [[r=3]]"}
    refused = post({"dataset": "scoped", "judges": ["conciseness"], "scope": "moved:only-one"})
    assert refused.status_code == 400 and "moved:A,B" in refused.json()["error"]


def test_the_sweep_form_offers_the_scope_and_starts_a_scoped_sweep(
    client, make_user, corpus, judge, comments, scripted_llm, eager_celery, django_capture_on_commit_callbacks
):
    client.force_login(make_user("lea", role="lead"))
    page = client.get(reverse("sweep_new")).content.decode()
    assert 'name="scope"' in page and "What reviewers commented on" in page
    base = {"dataset": corpus.pk, "judge_versions": [judge.pk], "repeats": 1, "variance_sample": 0.1, "qa_sample": 0}

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("sweep_new"), {**base, "scope": "commented", "category": "gloss"})

    sweep = Sweep.objects.get()
    assert response.status_code == 302
    assert scored(sweep) == {"Two [[r=2]]"}
    refused = client.post(reverse("sweep_new"), {**base, "scope": "moved", "moved": "1.0"})
    assert refused.status_code == 200 and "moved:A,B" in refused.content.decode()


def test_a_scoped_sweep_keeps_the_targets_it_planned_when_comments_change(
    corpus, judge, comments, make_user, scripted_llm, eager_celery, django_capture_on_commit_callbacks
):
    from reviewapp.judging.services.sweeps import sweep_start

    sweep = sweep_start(
        dataset=corpus, judge_versions=[judge], qa_sample=0, scope=sweep_scope.scope_parse("commented"), dispatch=False
    )
    Comment.objects.create(turn=comments["One [[r=3]]"], author=make_user("late"), body="after the plan")
    from reviewapp.judging.tasks.sweeps import sweep_dispatch

    with django_capture_on_commit_callbacks(execute=True):
        sweep_dispatch.delay(sweep.pk)
    sweep.refresh_from_db()

    assert sweep.status == Sweep.Status.DONE
    assert scored(sweep) == {"Two [[r=2]]", "Cinq [[r=3]]"}
