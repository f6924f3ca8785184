from django.apps import AppConfig


class ReviewappConfig(AppConfig):
    name = "reviewapp"
    verbose_name = "Tribunal"
    default_auto_field = "django.db.models.BigAutoField"
