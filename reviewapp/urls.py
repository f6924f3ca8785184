from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from .views import conversations, datasets, home, triage

urlpatterns = [
    path("", home.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("datasets/", datasets.dataset_list, name="dataset_list"),
    path("datasets/<int:dataset_id>/", datasets.dataset_detail, name="dataset_detail"),
    path("datasets/<int:dataset_id>/settings/", datasets.dataset_settings, name="dataset_settings"),
    path("datasets/<int:dataset_id>/triage/", triage.dataset_triage_run, name="dataset_triage"),
    path("conversations/<int:conversation_id>/", conversations.conversation_detail, name="conversation_detail"),
    path(
        "conversations/<int:conversation_id>/turns/<int:turn_id>/",
        conversations.conversation_turn,
        name="conversation_turn",
    ),
    path("", include("reviewapp.urls_imports")),
    path("", include("reviewapp.urls_signatures")),
    path("", include("reviewapp.urls_sweeps")),
    path("", include("reviewapp.urls_calls")),
    path("", include("reviewapp.urls_loop")),
    path("", include("reviewapp.urls_quality")),
    path("", include("reviewapp.urls_review")),
    path("", include("reviewapp.urls_exports")),
]
