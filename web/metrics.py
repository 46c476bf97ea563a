"""The Prometheus endpoint's answer (``web.operations`` routes ``/metrics`` here when
METRICS_ENABLED): who may read it, and what it reads.

Who: with METRICS_TOKEN, a request must carry ``Authorization: Bearer <token>``; with
METRICS_ALLOWED_NETWORKS, it must come from one of them (the address that connected:
behind a reverse proxy, the proxy's, so the proxy must not pass ``/metrics`` on); with
both, both. What: the counters and histograms of every process that counts (summed from
PROMETHEUS_MULTIPROC_DIR's files, or this process's own without it) and, read at the
scrape, the queue's figures (``annotation.serving.watch``) and whether the database
answered them."""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import logging

from django.conf import settings
from django.db import Error as DatabaseError
from django.db import connection
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from annotation.serving.watch import queue_watch

logger = logging.getLogger("web.metrics")


class QueueCollector:
    """The queue's gauges, read from the database at each scrape (never per request)."""

    def describe(self):
        return []  # no read when registered (the registry would collect to learn the names)

    def collect(self):
        up = GaugeMetricFamily("cxc_database_up", "1 when the scrape's queue reads answered, else 0.")
        try:
            watch = queue_watch()
        except DatabaseError as problem:
            logger.warning("metrics: the queue's figures could not be read: %s", problem)
            _close_quietly()
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        for name, text, figures in (
            ("cxc_queue_pairs_open", "Pairs still needing ratings.", watch.pairs_open),
            ("cxc_leases_held", "Leases held (queue slots and gold pairs).", watch.leases_held),
            ("cxc_leases_expired", "Held leases past their expiry, not yet claimed again.", watch.leases_expired),
        ):
            family = GaugeMetricFamily(name, text, labels=["dataset", "kind"])
            for (dataset, kind), value in sorted(figures.items()):
                family.add_metric([str(dataset), kind], value)
            yield family


def _close_quietly() -> None:
    """Drop this thread's broken connection, so that the next request connects anew."""
    with contextlib.suppress(DatabaseError):
        connection.close()


def scrape_registry(multiproc_dir: str):
    """The registry a scrape reads: every process's files in ``multiproc_dir`` when set,
    else this process's own metrics; the queue's gauges with either."""
    if multiproc_dir:
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=multiproc_dir)
        registry.register(QueueCollector())
        return registry
    if not _in_process["queue"]:  # the process's registry takes it once
        REGISTRY.register(QueueCollector())
        _in_process["queue"] = True
    return REGISTRY


_in_process = {"queue": False}


class MetricsEndpoint:
    """WSGI: the endpoint's answer, from the settings read once."""

    def __init__(self):
        self.token = settings.METRICS_TOKEN.encode()
        self.networks = settings.METRICS_ALLOWED_NETWORKS
        self.registry = scrape_registry(settings.METRICS_MULTIPROC_DIR)

    def refusal(self, environ) -> tuple[str, str] | None:
        """(status, reason) when the request may not read the metrics, else None."""
        if self.networks and not _address_in(environ.get("REMOTE_ADDR", ""), self.networks):
            return "403 Forbidden", "the metrics are not served to this address"
        if self.token:
            given = environ.get("HTTP_AUTHORIZATION", "").encode()
            if not hmac.compare_digest(given, b"Bearer " + self.token):
                return "401 Unauthorized", "the metrics need Authorization: Bearer <METRICS_TOKEN>"
        return None

    def __call__(self, environ, start_response):
        refused = self.refusal(environ)
        if refused is not None:
            status, reason = refused
            headers = [("Content-Type", "text/plain; charset=utf-8")]
            if status.startswith("401"):
                headers.append(("WWW-Authenticate", 'Bearer realm="metrics"'))
            start_response(status, headers)
            return [reason.encode() + b"\n"]
        body = generate_latest(self.registry)
        start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST), ("Cache-Control", "no-store")])
        return [body]


def _address_in(address: str, networks) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return False
    return any(ip in network for network in networks)
