"""How long the kube driver waits for the API server and the kubelet."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Timeouts:
    """Seconds to wait for the API and the kubelet; `poll` is the polling interval."""

    start: float = 300.0
    pod: float = 180.0
    delete: float = 60.0
    resize: float = 30.0
    exec: float = 60.0
    quota: float = 30.0
    start_retry: float = 90.0
    service_account: float = 30.0
    poll: float = 0.5


DEFAULT_TIMEOUTS = Timeouts()
