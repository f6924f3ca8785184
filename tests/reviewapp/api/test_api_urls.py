"""The site declares the API's URLs itself (so that loading the URLconf does not build the API): they are
ninja's own, and each answers through ninja's view of that operation."""

from django.urls import resolve

from reviewapp.api.site import api
from reviewapp.api.urls import OPERATIONS, ninja_views


def test_the_declared_api_urls_are_the_ones_ninja_makes():
    made = [(str(pattern.pattern), pattern.name) for pattern in api.urls[0] if pattern.name != "api-root"]
    assert list(OPERATIONS) == made


def test_each_api_url_answers_through_the_ninja_view_of_its_name():
    views = ninja_views()
    assert sorted(views) == sorted(name for _route, name in OPERATIONS)
    for route, name in OPERATIONS:
        match = resolve("/api/v1/" + route.replace("<sweep_id>", "7").replace("<snapshot_id>", "7"))
        assert match.url_name == name
        assert match.func.csrf_exempt is True
