from django.urls import path

from .views import sweeps

urlpatterns = [
    path("sweeps/", sweeps.sweep_list, name="sweep_list"),
    path("sweeps/new/", sweeps.sweep_new, name="sweep_new"),
    path("sweeps/<int:sweep_id>/", sweeps.sweep_detail, name="sweep_detail"),
]
