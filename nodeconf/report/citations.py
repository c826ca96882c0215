"""Rules as a reader can follow them: the oracle's and the suites' rule texts cite nodeconf's design notes and seed
documents by working names ("seed requests-limits-qos", "post table", "SEMANTICS.md Swap"), which are not shipped.
The report shows each as the document a reader can open: the article's or the post's title and section, the KEP, the
upstream file and function; REFERENCES lists the documents in full.

Source: issue 32 item 4; the seed documents' own titles (the requests/limits article, the Memory QoS v1.36 post), and
the upstream files the design notes cite for each rule (cgroup_manager_linux.go, crun cgroup-systemd.c).
"""

from __future__ import annotations

import re

UPSTREAM_CASE_LABEL = "upstream_case"  # the Allure label of a mirrored upstream case: `FILE: CASE`
UPSTREAM_URL = "https://github.com/kubernetes/kubernetes/blob/master/{file}"  # where a reader opens FILE
ARTICLE = 'article "How do requests, limits and QoS work?"'
POST = "Memory QoS v1.36 post"
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
# Working name → what a reader can open, applied in this order.
_CITES: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(pattern), text) for pattern, text in (
    (r"seed requests-limits-qos cgroup table", f'{ARTICLE}, section "What the numbers turn into: cgroup v2"'),
    (r"seed oom_score_adj table", f'{ARTICLE}, oom_score_adj table'),
    (r"(?:seed )?requests-limits-qos(?: article)?", ARTICLE),
    (r"\barticle\b(?! \")", ARTICLE),
    (r"\(seed\)", "(KEP-5359)"),
    (r"(?:Memory QoS (?:v1\.36 )?)?\bpost\b", POST),
    (r"SEMANTICS(?:\.md)? Cgroup layout", "kubelet pkg/kubelet/cm/cgroup_manager_linux.go, systemd driver names"),
    (r"SEMANTICS(?:\.md)? Swap", "kubelet canResizePod, disallowResizeForSwappableContainers"),
    (r", RUNTIME-FACTS(?:\.md)? §1\b", ""),
    (r"RUNTIME-FACTS(?:\.md)? §3c", "crun src/libcrun/cgroup-systemd.c get_memory_swap_max"),
))
# Names of documents that are not shipped: a shown rule that still holds one cites what no reader can open.
UNSHIPPED = re.compile(r"SEMANTICS|RUNTIME-FACTS|MEASURED\.md|DESIGN\.md|STYLE\.md|\bseeds?\b")


def readable(text: str) -> str:
    """`text` with every working name of a cited document replaced by what a reader can open."""
    for pattern, replacement in _CITES:
        text = pattern.sub(replacement, text)
    return text
