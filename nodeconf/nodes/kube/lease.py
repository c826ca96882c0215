"""A run's lease on its namespaces: an expiry annotation the live run renews, so a killed run's namespaces are
recognised as stale once it lapsed, on the API server's clock.

Times are the API server's (its HTTP `Date` header, RFC 9110 §6.6.1), so the clocks of the hosts that run and clean
never meet.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from nodeconf.nodes.base import NodeError
from nodeconf.nodes.kube.api import KubeApi, dig

EXPIRES = "nodeconf.io/expires"
TTL = timedelta(minutes=10)
RENEW_EVERY = 60.0  # seconds: nine renewals may fail before a live run's lease lapses
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # RFC 3339 in UTC, as Kubernetes writes timestamps


def expiry_annotations(now: datetime) -> dict[str, str]:
    """The annotation giving a run's namespace a lease until `now` + TTL."""
    return {EXPIRES: (now + TTL).astimezone(UTC).strftime(TIME_FORMAT)}


def expires_at(namespace: Mapping[str, Any]) -> datetime | None:
    """When the namespace's lease ends; None without a readable expiry annotation."""
    text = (dig(namespace, "metadata", "annotations") or {}).get(EXPIRES)
    try:
        return datetime.strptime(str(text), TIME_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


class Heartbeat:
    """Renews the lease of the run's namespaces every `every` seconds until stopped, in a daemon thread: when the
    run's process dies the renewals stop and the lease lapses after at most TTL."""

    def __init__(self, api: KubeApi, namespaces: Callable[[], Sequence[str]], every: float = RENEW_EVERY) -> None:
        self.api = api
        self.namespaces = namespaces
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="nodeconf-kube-lease", daemon=True)

    def renew(self) -> None:
        """Move every namespace's expiry to now + TTL; NodeError when the API refuses (`patch` on namespaces)."""
        annotations = expiry_annotations(self.api.now())
        for name in list(self.namespaces()):
            self.api.patch_namespace(name, {"metadata": {"annotations": annotations}})

    def start(self) -> None:
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            with contextlib.suppress(NodeError):  # retried at the next beat; TTL spans several
                self.renew()

    def stop(self) -> None:
        """Stop renewing; returns once no renewal is under way."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
