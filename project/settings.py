"""Tandem settings. Every value comes from the environment, with a safe development default.

This is the only module that reads the environment.
"""

from __future__ import annotations

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DEBUG", default=False)
# A development key is only acceptable while DEBUG is on; production must set SECRET_KEY.
# Django refuses to start with an empty SECRET_KEY, so production must set one.
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY and DEBUG:
    SECRET_KEY = "django-insecure-tandem-development-key-do-not-use-in-production"  # noqa: S105
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

HOST = env.str("HOST", default="127.0.0.1")
PORT = env.int("PORT", default=8000)
# Demo accounts are created by `manage.py tandem` only when no user exists and DEBUG is on.
TANDEM_DEMO_USERS = env.bool("TANDEM_DEMO_USERS", default=DEBUG)

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_tasks_db",  # the task table of the tool workers (see "Running at scale")
    "chat.apps.ChatConfig",
    "tools.apps.ToolsConfig",
    "tools.mcp.apps.McpConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "project.urls"
ASGI_APPLICATION = "project.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

VAR_DIR = BASE_DIR / "var"  # local state of the embedded default (SQLite file)
VAR_DIR.mkdir(exist_ok=True)
DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'tandem.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers run beside the single writer; IMMEDIATE avoids upgrade deadlocks.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
# Persistent connections: every ORM call of the async code goes through one thread, and opening
# a connection per call was a fifth of that thread's time under load (see tests/bench/load.py).
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DB_CONN_MAX_AGE", default=60))
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
DATABASES["default"].setdefault("TEST", {})
# Whether the sockets' doorbell, sidebar and session reads run in reader threads (a connection
# each) rather than on the one shared database thread; unset: on every database but SQLite
# (chat/sockets/fanout.py).
_reads_off_thread = env.str("TANDEM_DB_READS_OFF_THREAD", default="").strip().lower()
TANDEM_DB_READS_OFF_THREAD: bool | None = (
    None
    if _reads_off_thread in ("", "auto")
    else env.bool("TANDEM_DB_READS_OFF_THREAD")  # the usual spellings of true and false
)
# Whether a conversation's doorbell carries its change, described by the writer after its
# commit, so that the tabs at the bell's start cursor read nothing (chat/sockets/fanout.py).
# Off: measured in one process, it cost the shared database thread as much as the reads it
# saved, and sat on the send's critical path (README "Live path performance").
TANDEM_CARRY_CHANGES = env.bool("TANDEM_CARRY_CHANGES", default=False)
# How many reader threads serve them (and the sockets' session checks) per process.
TANDEM_DB_READER_THREADS = env.int("TANDEM_DB_READER_THREADS", default=2)
# The GIL's switch interval in a server process (Python's default is 5 ms). The database
# threads release the GIL on every SQLite call and then wait up to this long to get it back from
# the event loop: at 100 streams the shared database thread spent ~5x its CPU time in such
# waits at 1 ms, ~3x at 0.2 ms (README "Live path performance"). 0 keeps Python's default.
TANDEM_GIL_SWITCH_INTERVAL_MS = env.float("TANDEM_GIL_SWITCH_INTERVAL_MS", default=0.2)
# The garbage collector of a server process (chat/runtime/gc_tuning.py): start-up objects
# frozen out of every collection, and the young generation collected after this many
# allocations (Python's default is 2,000; 0 keeps it).
TANDEM_GC_FREEZE = env.bool("TANDEM_GC_FREEZE", default=True)
TANDEM_GC_GEN0_THRESHOLD = env.int("TANDEM_GC_GEN0_THRESHOLD", default=20_000)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env.str("REDIS_URL", default="")
# Names in Redis start with this, so several deployments (or test runs) can share one server.
REDIS_PREFIX = env.str("REDIS_PREFIX", default="tandem")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            # channels_redis's layer that joins its groups again after Redis restarts
            "BACKEND": "chat.runtime.redis_layer.RejoiningRedisChannelLayer",
            "CONFIG": {
                # channels_redis blocks 5 s per receive; redis-py 8 gives up reading after 5 s
                # by default, which would fail every idle receive: allow more.
                "hosts": [{"address": REDIS_URL, "socket_timeout": 15}],
                "capacity": 1000,
                "expiry": 60,
                "prefix": f"{REDIS_PREFIX}:asgi",
            },
        }
    }
else:
    CHANNEL_LAYERS = {
        # Channels' in-memory layer, cheaper per message (chat/runtime/layer.py).
        "default": {"BACKEND": "chat.runtime.layer.ProcessLayer", "CONFIG": {"capacity": 1000}}
    }
# The cache holds the per-user message rate limit (chat.sockets.ratelimit): shared through Redis by
# every process when REDIS_URL is set, per process in local memory otherwise.
CACHES = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": REDIS_PREFIX,
        }
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

# Where tools run. The embedded default runs them on the server's own event loop (async tools)
# and in a bounded thread pool (sync tools), so no extra service is needed.
# With TASKS_BACKEND=tools.db_backend.DatabaseBackend (django-tasks-db on PostgreSQL) they run
# on `manage.py tandem_worker` processes instead (README "Running at scale").
TASKS_BACKEND = env.str("TASKS_BACKEND", default="tools.task_backend.InProcessBackend")
TASKS = {
    "default": {
        "BACKEND": TASKS_BACKEND,
        "OPTIONS": {"max_threads": env.int("TOOL_THREADS", default=32)},
    }
}
# A durable queue keeps queued calls across restarts, so nobody enqueues them again.
TANDEM_TASKS_DURABLE = not TASKS_BACKEND.endswith(".InProcessBackend")
# Several processes share the work (a shared channel layer): ring the others (doorbells).
TANDEM_DOORBELLS = bool(REDIS_URL)
# Tool calls running at once in one worker process (threads, each claiming tasks in turn).
TANDEM_WORKER_THREADS = env.int("TANDEM_WORKER_THREADS", default=16)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "chat:index"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env.path("STATIC_ROOT", default=str(VAR_DIR / "staticfiles"))

# Security headers and cookies.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env.bool("BEHIND_TLS_PROXY", default=False) else None
)
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "object-src": [CSP.NONE],
}

# The model API. Without a key Tandem talks to its built-in simulator.
ANTHROPIC_API_KEY = env.str("ANTHROPIC_API_KEY", default="")
ANTHROPIC_BASE_URL = env.str("ANTHROPIC_BASE_URL", default="")
ANTHROPIC_MODEL = env.str("ANTHROPIC_MODEL", default="claude-sonnet-5-5")
ANTHROPIC_MAX_TOKENS = env.int("ANTHROPIC_MAX_TOKENS", default=4096)
ANTHROPIC_MAX_RETRIES = env.int("ANTHROPIC_MAX_RETRIES", default=2)
SIMULATOR_TOKENS_PER_SECOND = env.float("SIMULATOR_TOKENS_PER_SECOND", default=40.0)
SIMULATOR_SEED = env.int("SIMULATOR_SEED", default=0)

# Conversation engine.
TANDEM_STREAM_COALESCE_MS = env.int("TANDEM_STREAM_COALESCE_MS", default=40)
TANDEM_SNAPSHOT_INTERVAL_S = env.float("TANDEM_SNAPSHOT_INTERVAL_S", default=1.0)
TANDEM_LEASE_SECONDS = env.float("TANDEM_LEASE_SECONDS", default=30.0)
TANDEM_SWEEP_INTERVAL_S = env.float("TANDEM_SWEEP_INTERVAL_S", default=2.0)
TANDEM_TOOL_TIMEOUT_S = env.float("TANDEM_TOOL_TIMEOUT_S", default=300.0)
# A running tool beats every third of this; a call silent for longer lost its process: it is
# re-run (safe_to_repeat) or answered "interrupted" by the next sweep.
TANDEM_TOOL_HEARTBEAT_EXPIRY_S = env.float("TANDEM_TOOL_HEARTBEAT_EXPIRY_S", default=30.0)
# Keeping the prompt cache warm while tools run (README "Usage, cost and budgets"):
# "keepalive" (default), "1h" (every breakpoint at the 1-hour lifetime) or "off".
TANDEM_CACHE_STRATEGY = env.str("TANDEM_CACHE_STRATEGY", default="keepalive")
if TANDEM_CACHE_STRATEGY not in ("keepalive", "1h", "off"):
    raise ImproperlyConfigured("TANDEM_CACHE_STRATEGY must be keepalive, 1h or off.")
# Modules imported at start-up after the built-in tools, to register more tools.
TANDEM_EXTRA_TOOL_MODULES = env.list("TANDEM_EXTRA_TOOL_MODULES", default=[])
# MCP tool servers (tools.mcp): a server's token may be named in admin as an environment variable;
# only variables with this prefix can be named, so admin can never send out another secret.
TANDEM_MCP_TOKEN_PREFIX = "TANDEM_MCP_TOKEN_"  # noqa: S105 - a name prefix, not a secret
TANDEM_MCP_TOKENS = {
    name: value
    for name, value in env.ENVIRON.items()
    if name.startswith(TANDEM_MCP_TOKEN_PREFIX) and value
}
# How long listing a server's tools (on save and "Refresh tools" in admin) may take.
TANDEM_MCP_LIST_TIMEOUT_S = env.float("TANDEM_MCP_LIST_TIMEOUT_S", default=10.0)
TANDEM_APPROVAL_TIMEOUT_S = env.float("TANDEM_APPROVAL_TIMEOUT_S", default=24 * 3600.0)
TANDEM_MAX_TOOL_ROUNDS = env.int("TANDEM_MAX_TOOL_ROUNDS", default=10)
TANDEM_MAX_INVALID_TOOL_CALLS = env.int("TANDEM_MAX_INVALID_TOOL_CALLS", default=3)
TANDEM_MAX_MESSAGE_CHARS = env.int("TANDEM_MAX_MESSAGE_CHARS", default=20_000)
TANDEM_RATE_LIMIT_PER_MINUTE = env.int("TANDEM_RATE_LIMIT_PER_MINUTE", default=30)
# Login throttling (chat.login_throttle): failed attempts per account and per address within a
# window counted from the first failure; then every attempt is refused until the window ends.
TANDEM_LOGIN_FAILURES_PER_ACCOUNT = env.int("TANDEM_LOGIN_FAILURES_PER_ACCOUNT", default=5)
TANDEM_LOGIN_FAILURES_PER_ADDRESS = env.int("TANDEM_LOGIN_FAILURES_PER_ADDRESS", default=20)
TANDEM_LOGIN_WINDOW_S = env.int("TANDEM_LOGIN_WINDOW_S", default=15 * 60)
# Behind a proxy every request comes from the proxy: count the address it saw instead.
TANDEM_LOGIN_TRUST_X_FORWARDED_FOR = env.bool(
    "TANDEM_LOGIN_TRUST_X_FORWARDED_FOR", default=SECURE_PROXY_SSL_HEADER is not None
)
# Open sockets per user and server process (each page holds two: the chat and the sidebar).
TANDEM_MAX_SOCKETS_PER_USER = env.int("TANDEM_MAX_SOCKETS_PER_USER", default=20)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"daphne": {"level": "WARNING"}, "django.channels.server": {"level": "WARNING"}},
}
