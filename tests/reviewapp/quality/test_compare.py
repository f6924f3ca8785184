"""Version comparison: the demo pair names what moved and weighs it against rerun noise."""

import re

import pytest
from django.urls import reverse
from scipy.stats import binomtest

from reviewapp.demo.loader import demo_seed
from reviewapp.models import JudgeVersion, Role
from reviewapp.quality.selectors import comparisons
from tests import factories
from tests.factories import HTMX

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    demo_seed()
    versions = JudgeVersion.objects.filter(judge__slug="speakability").order_by("version")
    return {v.version: v for v in versions}


def test_demo_pair_names_gloss_moves_and_weighs_them_against_noise(client, make_user, demo):
    comparison = comparisons.version_comparison(a=demo["demo-v1"], b=demo["demo-v2"], n_boot=100)
    assert comparison.compared > 150
    noise = comparison.noise
    assert noise.n == comparison.compared  # demo-v1 has a second run on every target
    assert noise.version_moved > noise.noise_moved > 0
    # The page's verdict is the exact one-sided McNemar test on the targets that moved in only one comparison.
    expected = binomtest(noise.only_version, noise.only_version + noise.only_noise, 0.5, alternative="greater")
    assert noise.p_value == pytest.approx(expected.pvalue)
    assert noise.exceeds_noise == (expected.pvalue < 0.05)
    # The demo tells the story the screen exists for: demo-v1 lets glosses through, demo-v2 catches them.
    assert noise.exceeds_noise
    verdict = "is larger than run-to-run noise" if noise.exceeds_noise else "not distinguishable from run-to-run noise"
    pass_to_fail = next(m for m in comparison.moves if (m.before, m.after) == ("pass", "fail"))
    assert pass_to_fail.categories[0][0] == "gloss"
    assert dict(comparison.flags_by_name())["gloss"][1] > dict(comparison.flags_by_name())["gloss"][0]

    client.force_login(make_user("lea", role=Role.LEAD))
    url = reverse("compare_versions", args=["speakability"])
    html = client.get(url, {"a": demo["demo-v1"].pk, "b": demo["demo-v2"].pk}).content.decode()
    assert verdict in html
    assert f"moved {noise.version_moved} of {noise.n} targets" in html
    assert re.search(r"\d+ of \d+ pass → fail moves are gloss", html)
    assert '<svg class="heatmap"' in html and "Moved targets" in html
    assert not re.search(r"\sstyle=", html) and "<script>" not in html
    # Without "a", B is compared with the version before it.
    assert verdict in client.get(url, {"b": demo["demo-v2"].pk}).content.decode()

    fragment = client.get(url, {"b": demo["demo-v2"].pk, "language": "fr"}, **HTMX).content.decode()
    assert fragment.lstrip().startswith('<section id="comparison"') and "<html" not in fragment

    client.force_login(make_user("ana", languages=["fr"]))
    assert client.get(url).status_code == 403


def test_a_change_within_noise_is_called_so():
    judge = factories.binary_judge()
    turns = factories.agent_turns("calls", 40)
    v1, v2 = factories.version(judge, "v1"), factories.version(judge, "v2")
    base = [i % 4 != 0 for i in range(40)]
    factories.verdicts(factories.sweep_for(turns), v1, turns, base)
    factories.verdicts(
        factories.sweep_for(turns), v1, turns, [not p if i in (1, 2, 3) else p for i, p in enumerate(base)]
    )
    factories.verdicts(factories.sweep_for(turns), v2, turns, [not p if i in (5, 6) else p for i, p in enumerate(base)])
    comparison = comparisons.version_comparison(a=v1, b=v2, n_boot=0)
    # A's latest sweep is the reference; its earlier sweep is the rerun.
    assert comparison.noise.noise_moved == 3
    assert not comparison.noise.exceeds_noise
    assert "not distinguishable from run-to-run noise" in comparison.statement


def test_the_page_runs_a_fixed_number_of_queries(client, make_user, django_assert_max_num_queries):
    judge = factories.binary_judge()
    v1, v2 = factories.version(judge, "v1"), factories.version(judge, "v2")
    client.force_login(make_user("lea", role=Role.LEAD))
    for size in (6, 60):
        turns = factories.agent_turns(f"calls{size}", size)
        factories.verdicts(factories.sweep_for(turns), v1, turns, [True] * size)
        factories.verdicts(factories.sweep_for(turns), v2, turns, [bool(i % 2) for i in range(size)])
        factories.gold(judge, turns, [bool(i % 3) for i in range(size)], modes=["gloss"])
        with django_assert_max_num_queries(12):
            response = client.get(reverse("compare_versions", args=["speakability"]), {"a": v1.pk, "b": v2.pk})
        assert "moves are gloss" in response.content.decode()
