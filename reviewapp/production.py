"""Production settings: the base settings, hardened. `manage.py check --deploy` is clean here."""

from reviewapp.settings import *  # noqa: F403
from reviewapp.settings import env

DEBUG = False
SECRET_KEY = env.str("DJANGO_SECRET_KEY")  # no default: refuse to start without a real key
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS")
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = env.int("DJANGO_HSTS_SECONDS", default=31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "reviewapp.static_storage.RememberedManifestStaticFilesStorage"},
}
# Behind the HTTPS proxy every request comes from the proxy's address: login throttling reads the
# client's address from X-Forwarded-For, trusting TRIBUNAL_PROXY_COUNT proxies in front of gunicorn.
AXES_IPWARE_PROXY_COUNT = env.int("TRIBUNAL_PROXY_COUNT", default=1)
AXES_IPWARE_META_PRECEDENCE_ORDER = ["HTTP_X_FORWARDED_FOR", "REMOTE_ADDR"]

# Connection reuse: every gunicorn thread keeps its PostgreSQL connection across requests (no connect,
# TLS and authentication per page), checked before reuse when it may have gone stale. gunicorn.conf.py
# runs (cores + 1) workers x 4 threads, so that many connections per web machine. Django's own pool
# (OPTIONS["pool"]) needs the psycopg-pool package, which is not installed; a thread's persistent
# connection already gives each request a ready connection.
if not DATABASES["default"]["ENGINE"].endswith("sqlite3"):  # noqa: F405
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=600)  # noqa: F405
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True  # noqa: F405
