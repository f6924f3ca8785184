"""The Django project and app. Celery is not loaded here: reviewapp/celery.py says where it is."""


def __getattr__(name: str):
    # `reviewapp.celery_app`, as in Celery's Django layout, loaded when asked for.
    if name == "celery_app":
        from reviewapp.celery import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
