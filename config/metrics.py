"""The operator's counters and histograms (prometheus-client), shared by the processes that
count: the web workers (``web.operations`` counts every request), the database's 503s
(``config.exceptions``) and Celery's task failures (``config.celery``'s signal handler, in
the worker's processes).

Several processes count at once (granian's workers, Celery's pool): with
PROMETHEUS_MULTIPROC_DIR set each writes its figures to files of its own in that folder
(prometheus-client's multiprocess mode) and the endpoint sums them. The files are named
after the role, the host and the process id (``counter_web-host-1234.db``): the web server's start
empties the web's files, the worker's start its own, so the two may share one folder and
neither wipes the other's counts. Without the variable a process counts in its memory
(runserver, a single process)."""

import glob
import os
import socket

from prometheus_client import Counter, Histogram, values

# Who is counting: "web" unless a Celery worker process says otherwise (set before its
# first count). prometheus-client asks for the identifier at every increment, to notice a
# fork: it is kept, and forgotten in a forked child, so that no increment pays for a
# getpid() system call (three per claim or submit).
_identity: dict = {"role": "web", "id": None}
# Containers sharing the folder (docker-compose.yml: web, worker, beat) number their
# processes alike: the host name keeps their files apart. No "_": the collector splits on it.
_HOST = socket.gethostname().replace("_", "-")


def _process_identifier() -> str:
    identifier = _identity["id"]
    if identifier is None:
        identifier = _identity["id"] = f"{_identity['role']}-{_HOST}-{os.getpid()}"
    return identifier


def _forget_identifier() -> None:
    _identity["id"] = None


os.register_at_fork(after_in_child=_forget_identifier)


def set_role(name: str) -> None:
    _identity.update(role=name, id=None)


def clean_files(folder: str, role: str) -> int:
    """Remove the figures ``role``'s processes left in ``folder`` (a start begins at zero:
    the files of dead processes would be summed for ever); returns how many went."""
    files = glob.glob(os.path.join(folder, f"*_{role}-*.db"))
    for path in files:
        os.remove(path)
    return len(files)


if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    values.ValueClass = values.MultiProcessValue(process_identifier=_process_identifier)

# Where a request's view (its URL name) is left in the WSGI environ for the count: by
# config.middleware.ViewNameMiddleware once Django has resolved the URL, by the rating
# cycle's direct way (web.rating_wsgi) for the requests it routes.
VIEW_KEY = "cxc.view"

REQUESTS = Counter("cxc_http_requests", "Requests answered, by view (URL name) and status.", ["view", "status"])
# The rating cycle's claim and submit: their latency is the raters' wait. Buckets around
# the cycle's usual 2-20 ms, up to the seconds of an overloaded server.
RATING_LATENCY = Histogram(
    "cxc_rating_request_seconds",
    "Seconds from a claim or submit request reaching the application to its answer.",
    ["view"],
    buckets=(0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0),
)
# Every metric has labels: a labelled one makes its file at its first count, so a process
# that never counts (a manage.py command, beat) leaves no file in the shared folder.
DATABASE_UNAVAILABLE = Counter(
    "cxc_database_unavailable",
    "Requests answered 503 because the database did not answer, by answer (api: JSON, page: HTML).",
    ["answer"],
)
TASK_FAILURES = Counter("cxc_celery_task_failures", "Celery tasks that raised, by task name.", ["task"])
