"""The suites' source markers: each names the document a check's rule comes from, with the title the report shows
(its Allure epic, summary.json's `source`, `nodeconf checks`) and the help pytest lists for the marker.

Source: issue 32 item 4 (every check names its source); the documents' names in nodeconf/report/citations.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from nodeconf.semantics.documents import ARTICLE, POST

UPSTREAM_MARK = "upstream_e2e"


@dataclass(frozen=True)
class Source:
    """A source marker's title (as the report names the document) and its help line."""

    title: str
    help: str


# In the order a check with several source markers is filed under the first (summary.json `source`).
SOURCES: Mapping[str, Source] = {
    "kep5359": Source("KEP-5359", "source is KEP-5359 (swap awareness)"),
    "kep2400": Source("KEP-2400", "source is KEP-2400 (node swap)"),
    "memory_qos": Source(POST, "source is the Memory QoS v1.36 post"),
    "requests_limits": Source(ARTICLE, "source is the requests/limits/QoS article"),
    UPSTREAM_MARK: Source(
        "Kubernetes node e2e tests",
        'upstream_e2e(file=, case=): mirrors this case of the Kubernetes node e2e tests (file under test/e2e_node, '
        'test/e2e/common/node or test/e2e/node; case: its Describe / Context / It or Entry texts joined by " / ")'),
    "kubelet_config": Source("the KubeletConfiguration reference (kubelet.config.k8s.io/v1beta1)",
                             "source is the KubeletConfiguration reference (kubelet.config.k8s.io/v1beta1)"),
    "kubelet_code": Source("the kubelet's code (cited in the check)",
                           "source is the kubelet's code or a KEP it implements, cited in the check's docstring (no "
                           "upstream e2e case asserts it)"),
}
SOURCE_MARKERS: tuple[str, ...] = tuple(SOURCES)
