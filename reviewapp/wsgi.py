import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewapp.settings")
application = get_wsgi_application()

# A server imports every view, the API and the task queue's app now, before its first request (commands
# do not: reviewapp/lazy_views.py).
from reviewapp.lazy_views import load_site  # noqa: E402

load_site()
