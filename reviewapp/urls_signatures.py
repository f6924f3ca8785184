from django.urls import path

from .views import signatures

urlpatterns = [
    path("signatures/", signatures.signature_list, name="signature_list"),
    path("signatures/new/", signatures.signature_new, name="signature_create"),
    path("signatures/<int:signature_id>/", signatures.signature_detail, name="signature_detail"),
]
