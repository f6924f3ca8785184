from django.urls import path

from .views import signatures

urlpatterns = [
    path("signatures/", signatures.signature_list, name="signature_list"),
    path("signatures/new/", signatures.signature_new, name="signature_create"),
    path("signatures/<int:signature_id>/", signatures.signature_detail, name="signature_detail"),
    path("signatures/<int:signature_id>/edit/", signatures.signature_edit, name="signature_edit"),
    path("signatures/<int:signature_id>/active/", signatures.signature_active, name="signature_active"),
]
