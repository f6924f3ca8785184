from django.urls import path, re_path

from .views import api

urlpatterns = [
    path("api/v1/sweeps", api.sweep_create, name="api_sweep_create"),
    path("api/v1/sweeps/<int:sweep_id>", api.sweep_detail, name="api_sweep_detail"),
    path("api/v1/sweeps/<int:sweep_id>/gate", api.sweep_gate, name="api_sweep_gate"),
    path("api/v1/snapshots", api.snapshot_list, name="api_snapshot_list"),
    path("api/v1/snapshots/<int:snapshot_id>/download", api.snapshot_download, name="api_snapshot_download"),
    # Last: any other URL under /api/ answers a JSON 404.
    re_path(r"^api(?:/(?P<path>.*))?$", api.not_found, name="api_not_found"),
]
