"""Every model is in the Django admin, and every changelist opens with a search and a filter applied."""

import pytest
from django.apps import apps
from django.contrib import admin
from django.urls import reverse

from reviewapp.demo.loader import demo_seed


@pytest.fixture
def superuser(django_user_model):
    return django_user_model.objects.create_superuser("root", "root@example.com", "pw-test-12345")


def test_every_tribunal_model_is_registered():
    missing = [m.__name__ for m in apps.get_app_config("reviewapp").get_models() if not admin.site.is_registered(m)]
    assert missing == []


@pytest.mark.django_db
def test_every_changelist_opens_with_search_and_filters(client, superuser):
    demo_seed()
    client.force_login(superuser)
    for model in apps.get_app_config("reviewapp").get_models():
        model_admin = admin.site._registry[model]
        url = reverse(f"admin:reviewapp_{model._meta.model_name}_changelist")
        assert client.get(url).status_code == 200, url
        if model_admin.search_fields:
            assert client.get(url, {"q": "fr"}).status_code == 200, url
        assert model_admin.search_fields or model_admin.list_filter, f"{model.__name__} has no search or filter"
