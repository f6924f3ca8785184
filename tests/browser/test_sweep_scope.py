"""A lead starts a sweep of only what reviewers commented on, from the sweep form, with the keyboard and mouse."""

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from reviewapp.models import Category, Comment, Role, Sweep, Turn
from tests.factories import dataset_of_calls, store_judge

PASSWORD = "correct-horse-battery-7"


@pytest.fixture
def commented(make_user):
    dataset = dataset_of_calls("eva-run", {"c1": ("en", ["One", "Two"]), "c2": ("en", ["Three"])})
    judge = store_judge("conciseness")
    gloss = Category.objects.create(slug="gloss", name="Gloss")
    author = make_user("rita", languages=["en"])
    two = Turn.objects.get(text="Two")
    comment = Comment.objects.create(turn=two, author=author, body="term then its translation")
    comment.categories.add(gloss)
    Comment.objects.create(turn=Turn.objects.get(text="Three"), author=author, body="fine")
    return dataset, judge, two


@pytest.fixture
def sweep_form(page, login, make_user, commented):
    """A lead on the sweep form, the commented dataset and the judge chosen; the commented agent turn."""
    dataset, judge, two = commented
    make_user("lea", role=Role.LEAD, password=PASSWORD)
    login(page, "lea", PASSWORD)
    page.goto(reverse("sweep_new"))
    page.get_by_label("Dataset").select_option(label=dataset.name)
    page.get_by_label(f"conciseness@{judge.version}", exact=False).check()
    return two


def test_lead_rescores_the_turns_commented_with_one_category(page, sweep_form):
    two = sweep_form
    page.get_by_label("Scope").select_option(label="What reviewers commented on")
    assert two.comments.count() == 1
    page.get_by_label("Category").select_option(label="Gloss")
    page.get_by_label("Qa sample").fill("0")
    with page.expect_navigation():
        page.get_by_role("button", name="Start the sweep").click()

    sweep = Sweep.objects.get()
    assert sweep.params["scope"] == {"kind": "commented", "category": "gloss"}
    assert sweep.total_targets == 1
    expect(page.get_by_role("heading", level=1)).to_contain_text(f"Sweep #{sweep.pk}")
    expect(page.get_by_text("What reviewers commented on (gloss)")).to_be_visible()


def test_an_unreadable_scope_is_said_on_the_form(page, sweep_form):
    page.get_by_label("Scope").select_option(label="What moved between two versions")
    page.get_by_label("Moved").fill("1.0")
    with page.expect_navigation():
        page.get_by_role("button", name="Start the sweep").click()

    expect(page.get_by_role("alert")).to_contain_text("moved:A,B")
    assert not Sweep.objects.exists()
