"""Settings, all from the environment (12-factor). See .env.example for every variable.

Two run modes, chosen explicitly:

- ``embedded``: SQLite under ``var/`` and Celery tasks run in-process (eager). It is the
  default only when no ``DATABASE_URL`` is given.
- ``services``: PostgreSQL from ``DATABASE_URL`` and a real Celery broker from
  ``CELERY_BROKER_URL`` / ``REDIS_URL``. Nothing falls back to the embedded mode when a
  service is missing or down: configuration errors raise here, and an unreachable
  database or broker fails the request or the start-up check loudly.
"""

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.environment import BASE_DIR, env, int_at_least

# The Prometheus endpoint's METRICS_* settings and the log format (LOG_FORMAT).
from config.operations import *  # noqa: F403
from config.operations import LOG_FORMAT

# Passwords, password guessing, the client's address behind a proxy, crowd sign-up limits,
# API tokens and invitations.
from config.sign_in import *  # noqa: F403

# The UPLOAD_* settings: the bytes a file of each kind may have, the characters of an
# imported field, how long a run's files stay.
from config.upload_limits import *  # noqa: F403
from config.upload_limits import UPLOAD_PRUNE_SECONDS

DATABASE_URL = env.str("DATABASE_URL", default="")
RUN_MODE = env.str("RUN_MODE", default="services" if DATABASE_URL else "embedded")
if RUN_MODE not in ("embedded", "services"):
    raise ImproperlyConfigured(f"RUN_MODE must be 'embedded' or 'services', got {RUN_MODE!r}")
if RUN_MODE == "services" and not DATABASE_URL:
    raise ImproperlyConfigured("RUN_MODE=services needs DATABASE_URL (a PostgreSQL URL)")
if RUN_MODE == "embedded" and DATABASE_URL:
    raise ImproperlyConfigured(
        "DATABASE_URL is set but RUN_MODE=embedded: unset one of them; "
        "the embedded mode always uses SQLite under VAR_DIR"
    )

VAR_DIR = Path(env.str("VAR_DIR", default=str(BASE_DIR / "var")))
# Embedding vectors and export files live on disk, not in database rows.
DATA_DIR = Path(env.str("DATA_DIR", default=str(VAR_DIR / "data")))
EXPORT_DIR = Path(env.str("EXPORT_DIR", default=str(VAR_DIR / "exports")))
# The folder of PostgreSQL's client programs (pg_dump, pg_restore) that `manage.py backup`
# and `restore` run, e.g. /usr/lib/postgresql/15/bin; empty: the ones on PATH. Their major
# version must be at least the server's (annotation.backup.postgres checks it).
BACKUP_PG_BIN_DIR = env.str("BACKUP_PG_BIN_DIR", default="")

SECRET_KEY = env.str("SECRET_KEY", default="")
DEBUG = env.bool("DEBUG", default=RUN_MODE == "embedded")
if not SECRET_KEY:
    if RUN_MODE == "embedded" or DEBUG:
        # Only for local embedded runs; services mode must set its own.
        SECRET_KEY = "embedded-mode-insecure-key-not-for-production"
    else:
        raise ImproperlyConfigured("SECRET_KEY must be set when RUN_MODE=services and DEBUG is off")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
# JSON under /api/, the project's 403 page elsewhere.
CSRF_FAILURE_VIEW = "config.exceptions.csrf_failure"

INSTALLED_APPS = [
    # Before the admin: its admin/base_site.html adds the project's admin style sheet.
    "frontend",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "knox",
    "axes",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "annotation",
    "sampling",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # The resolved view's name, for the request counts (process_view only).
    "config.middleware.ViewNameMiddleware",
    # Before anything reads the path or the query (sessions, views, the database).
    "config.middleware.RefuseControlCharactersMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "config.middleware.LazyMessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes requires: it turns a request flagged as locked out into the
    # lockout answer (AXES_LOCKOUT_CALLABLE, config/sign_in.py).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "web.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "config.context_processors.run_mode",
            ],
        },
    },
]

if RUN_MODE == "services":
    DATABASES = {"default": env.db_url_config(DATABASE_URL)}
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
    # Off by default: the check is a "SELECT 1" round trip on every request's first query,
    # to spare the one request per thread that meets a connection the database dropped
    # (a restart); Django closes such a connection after that request's error.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = env.bool("CONN_HEALTH_CHECKS", default=False)
    # A database host that drops packets would hold each request (and its thread) for the
    # kernel's connect timeout, minutes, instead of answering 503 (config/exceptions.py).
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "connect_timeout", int_at_least("DATABASE_CONNECT_TIMEOUT", 5, minimum=1)
    )
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": env.str("SQLITE_PATH", default=str(VAR_DIR / "db.sqlite3")),
            "OPTIONS": {
                # Writers wait for the lock instead of failing with "database is locked";
                # IMMEDIATE takes the write lock at BEGIN so two writers never deadlock on
                # a lock upgrade. The same constraints as PostgreSQL hold in the schema.
                "timeout": 30,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The migrate command on PostgreSQL (annotation/schema/safe_migrate.py): each migration's
# statements wait at most MIGRATION_LOCK_TIMEOUT_MS for a lock (the raters' requests queue
# behind a waiting ALTER TABLE that long) and run at most MIGRATION_STATEMENT_TIMEOUT_MS
# (0: no limit); a migration that gave up a lock wait is rolled back and tried again up to
# MIGRATION_LOCK_RETRIES times, MIGRATION_RETRY_BACKOFF_MS after the first try, twice as long
# after each next (at most 30 s). Ten tries: a disk or CPU so busy that the rating cycle's
# transactions hold their locks for long gave five tries of 500 ms no window (bench-upgrade).
MIGRATION_LOCK_TIMEOUT_MS = int_at_least("MIGRATION_LOCK_TIMEOUT_MS", 500, minimum=1)
MIGRATION_STATEMENT_TIMEOUT_MS = int_at_least("MIGRATION_STATEMENT_TIMEOUT_MS", 60_000, minimum=0)
MIGRATION_LOCK_RETRIES = int_at_least("MIGRATION_LOCK_RETRIES", 10, minimum=0)
MIGRATION_RETRY_BACKOFF_MS = int_at_least("MIGRATION_RETRY_BACKOFF_MS", 1000, minimum=0)


# HTTPS (docs/operator-guide.md, "HTTPS behind a reverse proxy"). The defaults keep local http working; behind
# a TLS-terminating proxy set SECURE_PROXY_SSL_HEADER to the header it sets, e.g.
# HTTP_X_FORWARDED_PROTO (the value "https" marks a secure request).
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
_proxy_ssl_header = env.str("SECURE_PROXY_SSL_HEADER", default="")
if _proxy_ssl_header and not _proxy_ssl_header.startswith("HTTP_"):
    raise ImproperlyConfigured(
        f"SECURE_PROXY_SSL_HEADER names a request.META key such as HTTP_X_FORWARDED_PROTO, got {_proxy_ssl_header!r}"
    )
SECURE_PROXY_SSL_HEADER = (_proxy_ssl_header, "https") if _proxy_ssl_header else None
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
if SECURE_HSTS_SECONDS < 0:
    raise ImproperlyConfigured(f"SECURE_HSTS_SECONDS must be 0 (off) or more, got {SECURE_HSTS_SECONDS}")
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=False)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=False)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    # plotly.min.js from the pinned plotly package, and nothing else of it (frontend/vendor.py).
    "frontend.vendor.VendorFinder",
]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # collectstatic writes .gz copies beside the files; whitenoise serves them to browsers that accept gzip.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Vendored libraries sit under a folder named with their version: cache them for good.
WHITENOISE_IMMUTABLE_FILE_TEST = r"^.*/frontend/vendor/[a-z0-9_-]+-\d[^/]*/"
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
# Also the admin's logout: both land on the login page, not the admin's goodbye page.
LOGOUT_REDIRECT_URL = "/login/"

# Celery. In embedded mode tasks run in-process; in services mode a broker is required.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=env.str("REDIS_URL", default=""))
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=RUN_MODE == "embedded")
if not CELERY_TASK_ALWAYS_EAGER and not CELERY_BROKER_URL:
    raise ImproperlyConfigured(
        "Celery needs CELERY_BROKER_URL or REDIS_URL in services mode "
        "(or CELERY_TASK_ALWAYS_EAGER=true to run tasks in-process explicitly)"
    )
if CELERY_TASK_ALWAYS_EAGER and not CELERY_BROKER_URL:
    CELERY_BROKER_URL = "memory://"
CELERY_TASK_EAGER_PROPAGATES = True
# A chord (a sampling batch's search shards, then their merge) counts finished shards in
# a result backend: the broker's Redis by default. Tasks keep no results unless they say.
CELERY_RESULT_BACKEND = (
    env.str("CELERY_RESULT_BACKEND", default=CELERY_BROKER_URL if CELERY_BROKER_URL.startswith("redis") else "") or None
)
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_EXPIRES = 24 * 3600
# A task taken by a worker that then vanished (killed, host lost) goes back to the queue
# after this many seconds (Redis transport); a pool process that died returns it at once.
CELERY_VISIBILITY_TIMEOUT = int_at_least("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=5)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# Fail loudly when the broker is down instead of retrying for minutes.
CELERY_BROKER_CONNECTION_TIMEOUT = 3
CELERY_TASK_PUBLISH_RETRY = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# The served web process (web/served_wsgi.py) asks the server to close one answer's
# connection in this many, so that keep-alive clients are spread again over the worker
# processes (see web/keep_alive.py). 0: never.
WEB_KEEPALIVE_REQUESTS = int_at_least("WEB_KEEPALIVE_REQUESTS", 20, minimum=0)

# Rating queue. A claimed slot is leased for LEASE_TTL_SECONDS and renewed by the rating
# page's heartbeat; an expired lease is claimable again at once (no cron needed). Beat
# only tidies up: it returns expired leases to the open queue and recounts open pairs.
LEASE_TTL_SECONDS = int_at_least("LEASE_TTL_SECONDS", 600, minimum=10)
# The queue's hot statements run as server-side prepared statements (planned once per
# connection). Turn off behind a transaction-mode pooler such as PgBouncer's.
DB_PREPARED_STATEMENTS = env.bool("DB_PREPARED_STATEMENTS", default=True)
# The one switch between the single-statement PostgreSQL paths of the queue, gold serving
# and exclusion and their portable ORM paths (which SQLite always takes). "portable" on
# PostgreSQL exists so the tests run the ORM paths on the database CI checks them with.
SQL_PATHS = env.str("SQL_PATHS", default="postgres")
if SQL_PATHS not in ("postgres", "portable"):
    raise ImproperlyConfigured(f"SQL_PATHS must be 'postgres' or 'portable', got {SQL_PATHS!r}")
# The rating cycle's shortcuts past Django and DRF (docs/architecture.md, "Framework
# shortcuts"), each of which answers as the framework's way does: "wsgi" (the WSGI entry
# past the middleware chain; it needs "token_view"), "token_view" (a token POST answered
# past DRF's view), "input" (plain bodies read without the serializer), "answer" (answers
# built without the output serializers). Listed here, a shortcut is off: the framework's
# way answers (make bench-shortcuts measures each against it).
RATING_SHORTCUTS = ("wsgi", "token_view", "input", "answer")
RATING_SHORTCUTS_OFF = frozenset(env.list("RATING_SHORTCUTS_OFF", default=[]))
if not set(RATING_SHORTCUTS) >= RATING_SHORTCUTS_OFF:
    raise ImproperlyConfigured(
        f"RATING_SHORTCUTS_OFF: unknown {sorted(RATING_SHORTCUTS_OFF - set(RATING_SHORTCUTS))}; "
        f"use names of {list(RATING_SHORTCUTS)}"
    )
# Serving's per-process memories (a dataset's gold seen lately and its gold rate, the gold
# leases this process served, in annotation.serving.claim and annotation.rating.storing)
# only spare statements: off, every claim and submit asks the database, and every answer
# is the same (the serving tests run a pass with them off to prove it).
SERVING_PROCESS_MEMORY = env.bool("SERVING_PROCESS_MEMORY", default=True)
QUEUE_TIDY_SECONDS = env.int("QUEUE_TIDY_SECONDS", default=60)
QUEUE_RECOUNT_SECONDS = env.int("QUEUE_RECOUNT_SECONDS", default=3600)
ORPHAN_CHECK_SECONDS = env.int("ORPHAN_CHECK_SECONDS", default=60)
# The campaign dashboard's numbers are recomputed this often (seconds) for every dataset
# with ratings; pages read the newest snapshot and also offer a refresh on demand.
DASHBOARD_REFRESH_SECONDS = int_at_least("DASHBOARD_REFRESH_SECONDS", 300, minimum=10)
# The raters' quarter-hour tallies older than two days are read by no progress; pruned this often.
RATER_TALLY_PRUNE_SECONDS = 6 * 3600
# The modules that define tasks: a worker imports them at start, and so does every other
# process when Django starts (annotation.apps), since services queue tasks by name
# (annotation.core.task_queue) and a name must be registered where it is queued.
CELERY_IMPORTS = (
    "annotation.catalog.tasks",
    "annotation.dashboard.tasks",
    "annotation.jobs.tasks",
    "annotation.people.tasks",
    "annotation.quality.tasks",
    "annotation.serving.tasks",
    "sampling.runs.tasks",
)
CELERY_BEAT_SCHEDULE: dict = {
    "queue-release-expired-leases": {
        "task": "annotation.tasks.release_expired_leases",
        "schedule": QUEUE_TIDY_SECONDS,
    },
    "queue-recount-open-pairs": {
        "task": "annotation.tasks.recount_open_pairs",
        "schedule": QUEUE_RECOUNT_SECONDS,
    },
    "queue-prune-rater-tallies": {
        "task": "annotation.tasks.prune_rater_tallies",
        "schedule": RATER_TALLY_PRUNE_SECONDS,
    },
    # Jobs and batches whose worker died show as failed even when nobody looks at them.
    "jobs-fail-orphaned": {"task": "annotation.tasks.fail_orphaned_jobs", "schedule": ORPHAN_CHECK_SECONDS},
    "sampling-fail-orphaned": {"task": "sampling.tasks.fail_orphaned_batches", "schedule": ORPHAN_CHECK_SECONDS},
    "exclusions-resume": {"task": "annotation.tasks.resume_rating_exclusions", "schedule": ORPHAN_CHECK_SECONDS},
    "dashboard-refresh": {
        "task": "annotation.tasks.refresh_campaign_snapshots",
        "schedule": DASHBOARD_REFRESH_SECONDS,
    },
}

CELERY_BEAT_SCHEDULE["uploads-prune"] = {"task": "annotation.tasks.prune_uploads", "schedule": UPLOAD_PRUNE_SECONDS}
# Expired API tokens authenticate no one; the beat deletes their rows this often.
API_TOKEN_PRUNE_SECONDS = int_at_least("API_TOKEN_PRUNE_SECONDS", 3600, minimum=1)
CELERY_BEAT_SCHEDULE["tokens-prune-expired"] = {
    "task": "annotation.tasks.prune_expired_tokens",
    "schedule": API_TOKEN_PRUNE_SECONDS,
}


# Nearest-neighbour search for sampling, as JSON, e.g. {"kind": "hnsw", "exact_max": 50000}.
# Keys and defaults: sampling.search.index.IndexConfig (exact search up to 20,000 items, then IVF).
SAMPLING_INDEX = env.json("SAMPLING_INDEX", default={})
# Keep a chord's run folder (vectors, cells, each shard's neighbours) after its batch
# ends, to look into what the search found; by default it goes with the batch's end.
SAMPLING_KEEP_RUN_FOLDERS = env.bool("SAMPLING_KEEP_RUN_FOLDERS", default=False)
# A batch searching in a chord of shards is given up (failed, nothing written) when no
# shard has started or finished for this long: longer than a lost task takes to return.
SAMPLING_CHORD_STALL_SECONDS = int_at_least(
    "SAMPLING_CHORD_STALL_SECONDS", CELERY_VISIBILITY_TIMEOUT + 600, minimum=CELERY_VISIBILITY_TIMEOUT + 1
)

# The Retry-After of the 503 answered while the database does not answer.
DATABASE_RETRY_AFTER_SECONDS = int_at_least("DATABASE_RETRY_AFTER_SECONDS", 5, minimum=1)
REST_FRAMEWORK = {
    # Token first: its WWW-Authenticate header makes a missing or bad credential a 401
    # (with session authentication first it was a 403). Browsers send no token, so the
    # session still authenticates them, with its CSRF check.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "annotation.people.authentication.RoleTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # The API takes JSON bodies (null, nested objects); only the upload endpoints take
    # multipart forms, and they say so themselves. Anything else is refused with 415.
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "config.openapi.ProjectAutoSchema",
    "EXCEPTION_HANDLER": "config.exceptions.api_exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "CxC annotate API",
    "DESCRIPTION": "Graded semantic-similarity datasets for captioned images.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and ReDoc from this server's static files (pinned by the package
    # version), so /api/docs/ works offline and never loads a CDN's moving @latest.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # A PATCH body is parsed by the same serializer as the rest, its required fields
    # required (PATCH /api/sampling/batches/<id>/ needs its priority), not as all optional.
    "COMPONENT_SPLIT_PATCH": False,
    # <id:...> (config/converters.py): a whole number of at most 64 bits.
    "PATH_CONVERTER_OVERRIDES": {
        "id": {"type": "integer", "format": "int64", "minimum": 0, "maximum": 2**63 - 1},
        # A rating slot as the rater knows it (config/converters.py, annotation/core/opaque_ids.py).
        "slot_ref": {"type": "string", "pattern": "^[0-9]{1,19}$", "description": "An opaque id."},
    },
    "ENUM_NAME_OVERRIDES": {
        "TaskKindEnum": "annotation.models.TaskKind",
        # The CxC kinds the rating endpoints, links and quizzes take (not a review's REV).
        "RatingKindEnum": "annotation.apis.rating.RATING_KIND_CHOICES",
        "FlagReasonEnum": "annotation.models.FlagReason",
        "ModalityEnum": "annotation.models.Modality",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        # One JSON object a line (LOG_FORMAT=json), with the id of the request being served.
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "filters": {"request_id": {"()": "config.request_id.RequestIdFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_id"]}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # faiss logs at INFO which CPU variant it tried ("Could not load library with
        # AVX512 support ..."): not an error, and not the user's concern.
        "faiss.loader": {"level": "WARNING"},
        # axes announces its configuration at INFO in every process, manage.py commands too.
        "axes.apps": {"level": "WARNING"},
    },
}
