"""The documents the rules cite by name, in full for the report's References, and where a reader opens a mirrored
upstream case. The rules themselves cite what a reader can open (the article's or the post's title and section, the
KEP, the upstream file and function): their names are nodeconf.semantics.documents'.

Source: issue 32 item 4; the documents' own titles (the requests/limits article, the Memory QoS v1.36 post).
"""

from __future__ import annotations

from nodeconf.semantics.documents import ARTICLE, POST

UPSTREAM_CASE_LABEL = "upstream_case"  # the Allure label of a mirrored upstream case: `FILE: CASE`
UPSTREAM_URL = "https://github.com/kubernetes/kubernetes/blob/master/{file}"  # where a reader opens FILE
# (name used in rules, full reference) of each document the shown rules cite by name.
REFERENCES: tuple[tuple[str, str], ...] = (
    (ARTICLE, "Виталий Лещенко, “Kubernetes for beginners. Part 10: How do requests, limits and QoS work?”, "
              "28 October 2026"),
    (POST, "SIG Node, “Kubernetes v1.36: Memory QoS를 통한 계층형 메모리 보호” (Kubernetes v1.36: tiered memory "
           "protection with Memory QoS), the Kubernetes v1.36 release blog post on the MemoryQoS gate"),
    ("KEP-5359", "kubernetes/enhancements keps/sig-node/5359: Swap Awareness API (WorkloadControlledSwap)"),
    ("KEP-2400", "kubernetes/enhancements keps/sig-node/2400: Node memory swap support"),
    ("KEP-2570", "kubernetes/enhancements keps/sig-node/2570: Support memory qos with cgroups v2"),
)
