"""`{% url %}` and the navigation remember the URLs they reverse; the production static storage remembers
each file's URL. Each gives what Django gives, and stops giving a URL once what it was built from
changes: the script prefix, the URL configuration, a manifest written again."""

import subprocess
import sys

import pytest
from django.core.files.storage import FileSystemStorage
from django.http import HttpResponse
from django.template import Context, Engine, Template, TemplateSyntaxError
from django.test import override_settings
from django.urls import NoReverseMatch, path, reverse, set_script_prefix
from whitenoise.storage import CompressedManifestStaticFilesStorage

from reviewapp.remembered_urls import _reversed, remembered_reverse
from reviewapp.static_storage import RememberedManifestStaticFilesStorage
from tests.reviewapp.site.test_settings import PROJECT_DIR, clean_env


def _view(request, **kwargs):
    return HttpResponse("")


# The URL configuration of the test that swaps it in: the review screen's name at another path.
urlpatterns = [path("elsewhere/item/<int:item_id>/", _view, name="review_item")]


def render(source: str, **context) -> str:
    return Template("{% load remembered_urls %}" + source).render(Context(context))


@pytest.fixture(autouse=True)
def _fresh_urls():
    _reversed.cache_clear()
    yield
    _reversed.cache_clear()
    set_script_prefix("/")


def test_the_settings_make_it_the_url_tag_of_every_template():
    engine = Engine.get_default()
    assert "reviewapp.templatetags.remembered_urls" in engine.builtins
    template = engine.from_string("{% url 'review_item' 7 %}")
    assert type(template.nodelist[0]).__name__ == "RememberedURLNode"


def test_the_tag_gives_djangos_urls_and_remembers_them():
    assert render("{% url 'review_item' 7 %}") == reverse("review_item", args=[7]) == "/review/7/"
    assert render("{% url 'review_item' item_id=8 %}") == "/review/8/"
    assert render("{% url name pk %}", name="review_item", pk=9) == "/review/9/"
    hits = _reversed.cache_info().hits
    assert render("{% url 'review_item' 7 %}") == "/review/7/"
    assert _reversed.cache_info().hits == hits + 1
    assert render("{% url 'review_item' 7 as link %}[{{ link }}]") == "[/review/7/]"


def test_a_url_is_escaped_as_djangos_tag_escapes_it():
    assert render("{% url 'queue_index' %}?a=1&b=2") == "/queue/?a=1&b=2"
    assert render("<a href='{% url 'review_item' 7 %}'>") == "<a href='/review/7/'>"
    assert remembered_reverse("conversation_detail", [3]) == reverse("conversation_detail", args=[3])


def test_a_name_that_does_not_reverse_fails_every_time():
    for _ in range(2):
        with pytest.raises(NoReverseMatch):
            render("{% url 'review_item' 'not-a-number' %}")
        with pytest.raises(NoReverseMatch):
            remembered_reverse("no_such_page")
    assert render("{% url 'no_such_page' as link %}[{{ link }}]") == "[]"
    with pytest.raises(TemplateSyntaxError):
        render("{% url %}")


def test_the_script_prefix_is_part_of_what_is_remembered():
    assert render("{% url 'review_item' 7 %}") == "/review/7/"
    set_script_prefix("/tribunal/")
    assert render("{% url 'review_item' 7 %}") == "/tribunal/review/7/"
    assert remembered_reverse("queue_index") == "/tribunal/queue/"
    set_script_prefix("/")
    assert render("{% url 'review_item' 7 %}") == "/review/7/"


def test_another_url_configuration_gives_its_own_urls():
    assert remembered_reverse("review_item", [7]) == "/review/7/"
    with override_settings(ROOT_URLCONF=__name__):
        assert remembered_reverse("review_item", [7]) == "/elsewhere/item/7/"
        assert render("{% url 'review_item' 7 %}") == "/elsewhere/item/7/"
    assert remembered_reverse("review_item", [7]) == "/review/7/"


class Named:
    """An argument reversed through its text, which changes."""

    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


def test_an_argument_that_is_not_a_plain_string_or_integer_is_reversed_each_time():
    argument = Named("5")
    assert render("{% url 'review_item' arg %}", arg=argument) == "/review/5/"
    argument.text = "6"
    assert render("{% url 'review_item' arg %}", arg=argument) == "/review/6/"
    assert remembered_reverse("review_item", [argument]) == "/review/6/"


@pytest.mark.django_db
def test_the_navigation_links_are_djangos(django_user_model):
    from reviewapp.context_processors import nav_items

    user = django_user_model.objects.create_user(username="nav-lead", password="x" * 12, is_staff=True)

    class Request:
        resolver_match = None

    request = Request()
    request.user = user
    links = {item["label"]: item["url"] for item in nav_items(request)}
    assert links["Queue"] == reverse("queue_index")
    assert links["Admin"] == reverse("admin:index")
    assert links == {item["label"]: item["url"] for item in nav_items(request)}


# --- the production static storage ------------------------------------------------------------------


def _files(folder):
    return FileSystemStorage(location=str(folder))


def _collect(storage, source):
    """What collectstatic does for one file: copy it, then post-process (hash it, write the manifest)."""
    with _files(source).open("css/app.css") as handle:
        storage.delete("css/app.css")
        storage.save("css/app.css", handle)
    list(storage.post_process({"css/app.css": (_files(source), "css/app.css")}))


def test_the_static_storage_gives_the_manifest_url_and_a_new_one_after_collectstatic(tmp_path, settings):
    settings.DEBUG = False
    source, root = tmp_path / "source", tmp_path / "root"
    (source / "css").mkdir(parents=True)
    root.mkdir()
    (source / "css" / "app.css").write_text("body { color: black }")
    storage = RememberedManifestStaticFilesStorage(location=str(root), base_url="/static/")
    _collect(storage, source)
    first = storage.url("css/app.css")
    plain = CompressedManifestStaticFilesStorage(location=str(root), base_url="/static/")
    assert first == plain.url("css/app.css") != "/static/css/app.css"
    assert storage.url("css/app.css") == first
    # collectstatic again with the file changed: the same storage gives the new hashed name
    (source / "css" / "app.css").write_text("body { color: navy }")
    _collect(storage, source)
    second = storage.url("css/app.css")
    assert second != first
    assert second == CompressedManifestStaticFilesStorage(location=str(root), base_url="/static/").url("css/app.css")
    for _ in range(2):
        with pytest.raises(ValueError, match="Missing staticfiles manifest entry"):
            storage.url("css/missing.css")
    settings.DEBUG = True  # under DEBUG the manifest storage gives the name as it is
    assert storage.url("css/app.css") == "/static/css/app.css"
    settings.DEBUG = False
    assert storage.url("css/app.css") == second
    assert storage.url("css/app.css", force=True) == second


PRODUCTION_STATIC = """
import django
django.setup()
from django.contrib.staticfiles.storage import staticfiles_storage
from django.core.management import call_command
from django.templatetags.static import static
call_command("collectstatic", "--noinput", verbosity=0)
print(type(staticfiles_storage._wrapped).__name__, static("css/app.css"), static("css/app.css"))
"""


def test_production_serves_static_urls_through_the_remembering_storage(tmp_path):
    env = clean_env(
        DJANGO_SETTINGS_MODULE="reviewapp.production",
        DJANGO_SECRET_KEY="test-only-" + "k7#Qm2@vX9!pL4$wR8^zT1&nB6*yH3(eJ5)" * 2,
        DJANGO_ALLOWED_HOSTS="tribunal.example.org",
        STATIC_ROOT=str(tmp_path / "static"),
        TRIBUNAL_VAR_DIR=str(tmp_path / "var"),
    )
    result = subprocess.run(
        [sys.executable, "-c", PRODUCTION_STATIC], cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    kind, first, again = result.stdout.strip().splitlines()[-1].split()
    assert kind == "RememberedManifestStaticFilesStorage"
    assert first == again
    assert first.startswith("/static/css/app.") and first.endswith(".css") and first != "/static/css/app.css"
