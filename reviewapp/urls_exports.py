from django.urls import include, path

from .views import exports

urlpatterns = [
    path("exports/", exports.snapshot_list, name="snapshot_list"),
    path("exports/new/", exports.snapshot_new, name="snapshot_new"),
    path("exports/<int:snapshot_id>/", exports.snapshot_detail, name="snapshot_detail"),
    path("exports/<int:snapshot_id>/download/", exports.snapshot_download, name="snapshot_download"),
    path("", include("reviewapp.urls_api")),
]
