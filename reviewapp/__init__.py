"""The Django project and app. Celery is not loaded here but with the first task (see reviewapp/celery.py)."""
