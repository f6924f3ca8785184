"""The sweep, export and dispute forms draw every checkbox and radio before its label, on the same line,
and the label's text ticks it; languages are chosen from a select of the data's languages."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from reviewapp.models import Role, Sweep
from tests import factories
from tests.factories import dataset_of_calls, store_judge

PASSWORD = "correct-horse-battery-7"


@pytest.fixture
def lead(make_user):
    return make_user("lea", role=Role.LEAD, password=PASSWORD)


def assert_beside_and_clickable(page: Page, box_id: str) -> None:
    """The input is left of its label's text and level with it, and clicking the text ticks it."""
    box = page.locator(f"#{box_id}")
    text = page.locator(f'label[for="{box_id}"] > span')
    input_at, text_at = box.bounding_box(), text.bounding_box()
    assert input_at and text_at, f"{box_id} or its label is not drawn"
    assert input_at["x"] + input_at["width"] <= text_at["x"] + 1, f"{box_id} is not before its label"
    middle = input_at["y"] + input_at["height"] / 2
    assert text_at["y"] <= middle <= text_at["y"] + text_at["height"], f"{box_id} is not level with its label"
    assert input_at["width"] < 40, f"{box_id} is stretched across the form"
    was = box.is_checked()
    text.click()
    assert box.is_checked() != was, f"clicking the label of {box_id} did not change it"


def test_sweep_form_checkboxes_sit_beside_their_labels_and_the_language_select_works(page, login, lead):
    dataset = dataset_of_calls("calls", {"c1": ("fr", ["Bonjour"]), "c2": ("en", ["Hello"])})
    judge = store_judge("conciseness")
    login(page, "lea", PASSWORD)
    page.goto(reverse("sweep_new"))
    assert_beside_and_clickable(page, "id_judge_versions_0")
    language = page.get_by_label("Language")
    expect(language.locator("option")).to_have_text(["Every language of the dataset", "en", "fr"])
    number = page.get_by_label("Repeats")
    assert number.evaluate("e => getComputedStyle(e).borderTopStyle") == "solid"
    page.get_by_label("Dataset").select_option(label=dataset.name)
    language.select_option("fr")
    page.get_by_label("Qa sample").fill("0")
    with page.expect_navigation():
        page.get_by_role("button", name="Start the sweep").click()
    sweep = Sweep.objects.get(kind=Sweep.Kind.SWEEP)
    assert sweep.language == "fr" and list(sweep.judge_versions.all()) == [judge]


def test_export_form_checkboxes_sit_beside_their_labels(page, login, lead):
    dataset_of_calls("calls", {"c1": ("fr-CA", ["Bonjour"])})
    store_judge("conciseness")
    login(page, "lea", PASSWORD)
    page.goto(reverse("snapshot_new"))
    for box_id in ("id_datasets_0", "id_gold_sources_0", "id_languages_0", "id_languages_1"):
        assert_beside_and_clickable(page, box_id)
    expect(page.locator('label[for="id_languages_0"]')).to_have_text("fr")
    expect(page.locator('label[for="id_languages_1"]')).to_have_text("fr-CA")


def test_dispute_form_radios_and_checkboxes_sit_beside_their_labels(page, login, lead, make_user):
    judge = factories.binary_judge()
    turns = factories.agent_turns("calls", 1)
    factories.verdicts(factories.sweep_for(turns), factories.version(judge, "v1"), turns, [False])
    item = factories.item(judge, turns[0])
    factories.review(item, make_user("ana", languages=["fr"]), passed=True)
    factories.review(item, make_user("bea", languages=["fr"]), passed=False, categories=[factories.category("gloss")])
    login(page, "lea", PASSWORD)
    page.goto(reverse("dispute_detail", args=[item.pk]))
    for box_id in ("id_outcome_0", "id_outcome_1", "id_categories_0", "id_to_1"):
        assert_beside_and_clickable(page, box_id)
