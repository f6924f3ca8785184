"""Tribunal settings.

Every value comes from the environment with an embedded default, so a fresh clone runs at once:
SQLite under var/, a serverless Celery broker (kombu filesystem transport under var/), LLM tier off.
Set DATABASE_URL / CELERY_BROKER_URL / OPENAI_* to run distributed (PostgreSQL, Redis, any
OpenAI-compatible endpoint). Production hardening lives in reviewapp/production.py.
"""

from datetime import timedelta
from pathlib import Path

import environ
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()
if (BASE_DIR / ".env").exists():
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)
VAR_DIR = Path(env.str("TRIBUNAL_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env.bool("DJANGO_DEBUG", default=True)
# A development-only key; production.py refuses to start without DJANGO_SECRET_KEY.
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="dev-only-insecure-key-change-me-in-production")
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "axes",
    "reviewapp",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "reviewapp.people.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "reviewapp.urls"
WSGI_APPLICATION = "reviewapp.wsgi.application"
ASGI_APPLICATION = "reviewapp.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
                "reviewapp.context_processors.tribunal",
                "reviewapp.context_lead_tools.lead_tools",
            ],
            # `|bidi` on every transcript: bidirectional controls shown, never obeyed. The page skeleton's
            # tags (page head, filter bar, results, form card) are on every page. `{% url %}` remembers
            # the URLs it reverses (remembered_urls).
            "builtins": [
                "reviewapp.templatetags.text_safety",
                "reviewapp.templatetags.skeleton",
                "reviewapp.templatetags.remembered_urls",
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'tribunal.sqlite3'}"),
}
DATABASES["default"].setdefault("ATOMIC_REQUESTS", False)
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # WAL lets the web process read while a worker writes; a busy timeout instead of "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].setdefault("timeout", 20)
    DATABASES["default"]["OPTIONS"].setdefault("init_command", "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
    DATABASES["default"]["OPTIONS"].setdefault("transaction_mode", "IMMEDIATE")
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DATABASE_CONN_MAX_AGE", default=60))
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Django's backend, whose health check asks the socket before the server (reviewapp/postgresql).
        DATABASES["default"]["ENGINE"] = "reviewapp.postgresql"
# The hot paths' fixed statements kept prepared on each PostgreSQL connection (`rows.prepared_cursor`);
# off behind a pooler in transaction mode that does not track prepared statements (docs/performance.md).
DATABASE_PREPARED_STATEMENTS = env.bool("DATABASE_PREPARED_STATEMENTS", default=True)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env.str("STATIC_ROOT", default=str(VAR_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# Without collectstatic (development, tests), WhiteNoise serves straight from static/.
WHITENOISE_USE_FINDERS = DEBUG
MEDIA_URL = "media/"
MEDIA_ROOT = Path(env.str("MEDIA_ROOT", default=str(VAR_DIR / "media")))

LOGIN_URL = "login"

# --- Login throttling (django-axes) -------------------------------------------------------------
# TRIBUNAL_LOGIN_FAILURE_LIMIT wrong passwords for one account (or from one client address, for
# guessing across accounts) lock it for TRIBUNAL_LOGIN_COOLOFF_MINUTES: until then even the right
# password is refused (HTTP 429, the lockout page). A successful login resets the count. Attempts are kept in the database
# (axes.AccessAttempt, visible in Django admin); `manage.py axes_reset_username USER` lifts a lock.
AUTHENTICATION_BACKENDS = [
    "reviewapp.people.auth_backends.LoginThrottleBackend",
    "reviewapp.people.auth_backends.ProfileModelBackend",
]
AXES_FAILURE_LIMIT = env.int("TRIBUNAL_LOGIN_FAILURE_LIMIT", default=30)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("TRIBUNAL_LOGIN_COOLOFF_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_HTTP_RESPONSE_CODE = 429
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Content-Security-Policy: everything is served from this origin; no inline script at all.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "media-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# Database sessions, their per-request read written once (reviewapp/people/sessions.py).
SESSION_ENGINE = "reviewapp.people.sessions"

# --- Celery -----------------------------------------------------------------------------------
# Default broker needs no server: kombu's filesystem transport under var/. Redis when set.
_broker_dir = VAR_DIR / "broker"
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="filesystem://")
if CELERY_BROKER_URL.startswith("filesystem://"):
    for sub in ("in", "processed", "control"):
        (_broker_dir / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "in"),
        "data_folder_out": str(_broker_dir / "in"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
else:
    # Redis redelivers an unacknowledged task (its worker died) after the visibility timeout. The
    # default is sized to the longest sweep chunk (its hard time limit, derived below from chunk
    # size x LLM timeout) plus a minute, so a killed worker's chunks come back within minutes, not an hour.
    # (set with the sweep settings below: TRIBUNAL_SWEEP_CHUNK_TIME_LIMIT + 60 s).
    CELERY_BROKER_TRANSPORT_OPTIONS = {}
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default="") or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=600)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=660)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery beat (periodic tasks) keeps its schedule state under var/, not in the working directory.
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
REDIS_URL = env.str("REDIS_URL", default="")

# --- LLM tier ---------------------------------------------------------------------------------
# Unset OPENAI_BASE_URL and OPENAI_API_KEY: the LLM tier is off and the UI says so.
OPENAI_BASE_URL = env.str("OPENAI_BASE_URL", default="")
OPENAI_API_KEY = env.str("OPENAI_API_KEY", default="")
OPENAI_MODEL = env.str("OPENAI_MODEL", default="gpt-4o-mini")
OPENAI_TIMEOUT_SECONDS = env.float("OPENAI_TIMEOUT_SECONDS", default=60.0)
LLM_TIER_ENABLED = bool(OPENAI_BASE_URL or OPENAI_API_KEY)
# One rate per model shared by every worker (in Redis when a Redis broker or REDIS_URL is set).
LLM_RATE_LIMIT_PER_SECOND = env.float("LLM_RATE_LIMIT_PER_SECOND", default=20.0)
LLM_RATE_LIMITS = {k: float(v) for k, v in env.dict("LLM_RATE_LIMITS", default={}).items()}  # "model=rate,..."
LLM_RATE_LIMIT_MAX_WAIT_SECONDS = env.float("LLM_RATE_LIMIT_MAX_WAIT_SECONDS", default=120.0)
LLM_MAX_ATTEMPTS = env.int("LLM_MAX_ATTEMPTS", default=4)
# The call archive keeps the first this-many bytes of every answer or HTTP body (with its full size
# and sha256); a verdict keeps at most VERDICT_RAW_TEXT_MAX_CHARS of it, the archived call the rest.
JUDGE_CALL_BODY_CAP_BYTES = env.int("JUDGE_CALL_BODY_CAP_BYTES", default=256 * 1024)
VERDICT_RAW_TEXT_MAX_CHARS = env.int("VERDICT_RAW_TEXT_MAX_CHARS", default=4000)

# --- Tribunal ---------------------------------------------------------------------------------
# Sweeps: targets per Celery task, concurrent LLM calls inside one task, an optional dedicated queue
# (run `celery -A reviewapp worker -Q llm` for it), and a chunk's soft time limit in seconds.
TRIBUNAL_SWEEP_CHUNK_SIZE = env.int("TRIBUNAL_SWEEP_CHUNK_SIZE", default=128)
TRIBUNAL_SWEEP_LLM_THREADS = env.int("TRIBUNAL_SWEEP_LLM_THREADS", default=128)
TRIBUNAL_SWEEP_QUEUE = env.str("TRIBUNAL_SWEEP_QUEUE", default="")
# A chunk's calls go out in ceil(chunk size / LLM threads) waves, each at most LLM_MAX_ATTEMPTS x
# OPENAI_TIMEOUT_SECONDS: the default soft limit covers that, and is never below 300 s.
_chunk_waves = -(-TRIBUNAL_SWEEP_CHUNK_SIZE // max(1, TRIBUNAL_SWEEP_LLM_THREADS))
TRIBUNAL_SWEEP_CHUNK_SOFT_LIMIT = env.int(
    "TRIBUNAL_SWEEP_CHUNK_SOFT_LIMIT", default=max(300, int(_chunk_waves * LLM_MAX_ATTEMPTS * OPENAI_TIMEOUT_SECONDS))
)
TRIBUNAL_SWEEP_CHUNK_TIME_LIMIT = TRIBUNAL_SWEEP_CHUNK_SOFT_LIMIT + 60
if not CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] = env.int(
        "CELERY_VISIBILITY_TIMEOUT", default=TRIBUNAL_SWEEP_CHUNK_TIME_LIMIT + 60
    )
# Recovery: every TRIBUNAL_SWEEP_RECONCILE_SECONDS Celery beat looks for running sweeps with no sign
# of life (no verdict, no chunk heartbeat) for TRIBUNAL_SWEEP_STALL_SECONDS and re-sends the chunks
# that still miss verdicts; chunks skip what is written, so a re-sent chunk never doubles a verdict.
TRIBUNAL_SWEEP_RECONCILE_SECONDS = env.int("TRIBUNAL_SWEEP_RECONCILE_SECONDS", default=15)
# A live chunk reports every TRIBUNAL_SWEEP_HEARTBEAT_SECONDS, even while its LLM calls wait, so
# three missed heartbeats mean its worker is gone.
TRIBUNAL_SWEEP_STALL_SECONDS = env.int("TRIBUNAL_SWEEP_STALL_SECONDS", default=30)
# A running chunk reports it is alive this often (seconds).
TRIBUNAL_SWEEP_HEARTBEAT_SECONDS = env.int("TRIBUNAL_SWEEP_HEARTBEAT_SECONDS", default=10)
TRIBUNAL_CODE_VERSION = env.str("TRIBUNAL_CODE_VERSION", default="")
# PostgreSQL: a new dataset's import checks its rows' foreign keys in one statement per table, not
# with one trigger call per row, where its role may set session_replication_role (a superuser, or
# `GRANT SET ON PARAMETER session_replication_role TO <role>` on PostgreSQL 15+); see
# reviewapp/corpus/importers/keys.py. false: every row goes through the triggers.
TRIBUNAL_IMPORT_SET_BASED_KEYS = env.bool("TRIBUNAL_IMPORT_SET_BASED_KEYS", default=True)
# PostgreSQL: a new dataset's import reads and checks its input in a child process (fork) while the
# importing process writes, where the process has one thread (reviewapp/corpus/importers/reading_process.py).
# false: it reads on a thread beside the writing one.
TRIBUNAL_IMPORT_READING_PROCESS = env.bool("TRIBUNAL_IMPORT_READING_PROCESS", default=True)
# Tier 1 never guesses: a signature whose matches agree with gold less often than the floor, on at
# least TRIBUNAL_SIGNATURE_MIN_GOLD compared matches, is refused (created or changed) or suspended
# (gold arrived later; rechecked every TRIBUNAL_SIGNATURE_RECHECK_SECONDS by Celery beat and at
# every sweep start).
TRIBUNAL_SIGNATURE_PRECISION_FLOOR = env.float("TRIBUNAL_SIGNATURE_PRECISION_FLOOR", default=0.9)
TRIBUNAL_SIGNATURE_MIN_GOLD = env.int("TRIBUNAL_SIGNATURE_MIN_GOLD", default=5)
TRIBUNAL_SIGNATURE_RECHECK_SECONDS = env.int("TRIBUNAL_SIGNATURE_RECHECK_SECONDS", default=300)
JUDGE_CALL_RETENTION_DAYS = env.int("JUDGE_CALL_RETENTION_DAYS", default=90)
# Imports started from the browser: server paths must lie under this folder, and an upload (or the
# file or folder a path names) may not be larger than this many bytes.
TRIBUNAL_IMPORT_ROOT = Path(env.str("TRIBUNAL_IMPORT_ROOT", default=str(VAR_DIR / "imports")))
TRIBUNAL_IMPORT_MAX_BYTES = env.int("TRIBUNAL_IMPORT_MAX_BYTES", default=500 * 1024 * 1024)
TRIBUNAL_UPLOAD_DIR = Path(env.str("TRIBUNAL_UPLOAD_DIR", default=str(VAR_DIR / "uploads")))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        # One line per LLM request at INFO would drown a sweep's log; errors still come through.
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
    },
}

# --- Retention: purge judge-call archives older than JUDGE_CALL_RETENTION_DAYS, every night ---------
# A schedule given as a dict is crontab fields (here 03:17): reviewapp/celery.py makes the crontab, so that
# these settings, which every command loads, do not load Celery (celery.schedules imports all of it).
CELERY_BEAT_SCHEDULE = globals().get("CELERY_BEAT_SCHEDULE", {})
CELERY_BEAT_SCHEDULE["judge-calls-purge"] = {
    "task": "reviewapp.judging.tasks.retention.judge_calls_purge_old",
    "schedule": {"hour": 3, "minute": 17},
}
# Tier 1: suspend signatures that contradict newly arrived gold (see TRIBUNAL_SIGNATURE_PRECISION_FLOOR).
CELERY_BEAT_SCHEDULE["signatures-recheck"] = {
    "task": "reviewapp.judging.tasks.signatures.signatures_recheck_all",
    "schedule": float(TRIBUNAL_SIGNATURE_RECHECK_SECONDS),
}
# Kept export rows (PostgreSQL) catch up every TRIBUNAL_EXPORT_LINES_KEEP_SECONDS with what went stale
# without a hook keeping it at once (triage, renames, deploys, labels); 0 turns the periodic keep off.
TRIBUNAL_EXPORT_LINES_KEEP_SECONDS = env.int("TRIBUNAL_EXPORT_LINES_KEEP_SECONDS", default=300)
if TRIBUNAL_EXPORT_LINES_KEEP_SECONDS > 0:
    CELERY_BEAT_SCHEDULE["export-lines-keep"] = {
        "task": "reviewapp.exports.tasks.exports.export_lines_keep_current",
        "schedule": float(TRIBUNAL_EXPORT_LINES_KEEP_SECONDS),
    }
# Sweeps that recover: re-send the chunks of a running sweep whose worker died (see TRIBUNAL_SWEEP_STALL_SECONDS).
CELERY_BEAT_SCHEDULE["sweeps-reconcile"] = {
    "task": "reviewapp.judging.tasks.sweeps.sweeps_reconcile",
    "schedule": float(TRIBUNAL_SWEEP_RECONCILE_SECONDS),
}
