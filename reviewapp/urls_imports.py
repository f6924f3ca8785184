from django.urls import path

from .views import imports

urlpatterns = [
    path("imports/new/", imports.import_new, name="import_new"),
    path("imports/<int:job_id>/", imports.import_detail, name="import_detail"),
]
