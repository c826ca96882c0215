"""Node facts as a reader needs them: each once, human units beside raw bytes, pairs instead of Python tuples, empty
values left out, no internal paths; and the node's scope: what started its containers and what played the kubelet.

Source: issue 32 item 4; the facts are environment(-NAME).properties entries (nodeconf/fixtures/evidence.py, NodeFacts).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from nodeconf.report.run_info import RUN_KEYS

IMAGE_KEY = "image"  # what the node booted from (Node.image), shown in its scope
KUBELET_FLAGS_KEY = "kubelet_flags"  # the flags nodeconf's kubelet runs with (Node.kubelet_flags), a fact row
KUBELET_KEY = "kubelet_version"  # shown in its scope
NOT_USED_KEY = "runtime_not_used"  # why the node's own runtime was not used (runtime_choice.py), shown in its scope
SCOPE_TITLES = (IMAGE_KEY, "containers started by", "kubelet")  # scope()'s rows, in its order
# Entries that are the run's, not the node's (shown in the run header), and the node's settings shown elsewhere.
NOT_FACTS = frozenset({*RUN_KEYS, "node", "accepted cpu weight formula", "name", "position", "run_complete",
                       IMAGE_KEY, KUBELET_KEY, NOT_USED_KEY})
BYTES_FACTS = frozenset({"memory_capacity", "swap_capacity", "page_size"})
# The runtimes that take containers over the CRI (the node's own kubelet-facing runtime), by `runtime` fact.
CRI_RUNTIMES = frozenset({"containerd", "cri-o", "crio"})
DIRECT = "direct"
_UNITS = (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))
_TUPLE = re.compile(r"\(\s*'?([^,')]*)'?\s*,\s*'?([^')]*)'?\s*\)")  # ('CONFIG_X', 'y') or (2097152, 16777216)
_TEMP_DIRS = tuple(sorted({"/tmp", "/var/tmp", tempfile.gettempdir()}, key=len, reverse=True))
_TEMP_PATH = re.compile(r"(?<![\w./-])(?:" + "|".join(re.escape(d) for d in _TEMP_DIRS) + r")(?:/[^\s'\"&;,)]+)+")


def human_bytes(count: int) -> str:
    """`2069446656` → `1.93 GiB`; below 1 KiB the bytes."""
    for unit, size in _UNITS:
        if count >= size:  # cut, not rounded: 1073737728 bytes are 1023.99 MiB, not "1024 MiB"
            return f"{count * 100 // size / 100:.2f}".rstrip("0").rstrip(".") + f" {unit}"
    return f"{count} bytes"


def neutral_paths(text: str) -> str:
    """`text` with every path under a temporary directory shown as `<tmp>/…/NAME` and the home directory as `~`:
    where a run kept its files says nothing about the node and is no business of the report's reader."""
    text = _TEMP_PATH.sub(lambda m: f"<tmp>/…/{Path(m[0]).name}", text)
    home = str(Path.home())
    return text.replace(home + "/", "~/") if home not in ("/", "") else text


def pairs(value: str) -> list[tuple[str, str]]:
    """`(a, b), (c, d)` (as facts were once written) or `a=b, c=d` as pairs."""
    found = [(m[1].strip(), m[2].strip()) for m in _TUPLE.finditer(value)]
    if found:
        return found
    return [(k.strip(), v.strip()) for k, _, v in (item.partition("=") for item in value.split(", ")) if _ and k]


def _hugepages(value: str) -> str:
    shown = []
    for size, total in pairs(value):
        if not (size.isdigit() and total.isdigit()):
            return value
        amount = f"{human_bytes(int(total))} ({total} bytes)" if int(total) else "none reserved"
        shown.append(f"{human_bytes(int(size))} pages: {amount}")
    return "; ".join(shown)


def shown_fact(key: str, value: str) -> str:
    """One fact's value as the report shows it."""
    if key in BYTES_FACTS and value.isdigit():
        return f"{human_bytes(int(value))} ({value} bytes)"
    if key == "cpu_capacity_milli" and value.isdigit():
        return f"{int(value) / 1000:g} cpus ({value}m)"
    if key == "hugepages":
        return _hugepages(value)
    if key in ("kernel_config", "runtime_config"):
        found = pairs(value)
        return ", ".join(f"{k}={v}" for k, v in found) if found else neutral_paths(value)
    return neutral_paths(value)


def fact_rows(entries: Sequence[tuple[str, str]], shown_elsewhere: Collection[str] = ()) -> list[tuple[str, str]]:
    """The node's facts (run entries, settings, facts `shown_elsewhere` and empty values left out), as shown."""
    return [(key, shown_fact(key, value)) for key, value in entries
            if key not in NOT_FACTS and key not in shown_elsewhere and value.strip()]


def scope(facts: Mapping[str, str]) -> list[tuple[str, str]]:
    """What was the node's own and what was nodeconf's: the image it booted from (where nodeconf booted it), who
    started the containers, what played the kubelet (from the spec and the `image`, `runtime`, `runtime_version`,
    `runtime_not_used` and `kubelet_version` facts; any runtime value is shown)."""
    if not any(facts.get(key) for key in ("node", "runtime", KUBELET_KEY)):
        return []
    kube = facts.get("node", "").startswith("kube") or bool(facts.get(KUBELET_KEY))
    runtime, version = facts.get("runtime", ""), facts.get("runtime_version", "")
    named = " ".join(part for part in (runtime, "" if version == runtime else version) if part)
    if kube:
        containers = f"the node's {named or 'container runtime'} (CRI, through the node's kubelet)"
        kubelet = " ".join(part for part in ("the node's kubelet", facts.get(KUBELET_KEY, "")) if part)
    else:
        kubelet = "nodeconf's enforcer (it plays the kubelet: the node's own kubelet is not exercised)"
        if not runtime:
            containers = "not recorded (the node's facts name no runtime)"
        elif runtime == DIRECT and facts.get(NOT_USED_KEY):
            containers = f"nodeconf's enforcer (the node's container runtime was not used: {facts[NOT_USED_KEY]})"
        elif runtime == DIRECT:
            containers = "nodeconf's enforcer (direct: it writes the cgroups itself; no container runtime exercised)"
        elif runtime in CRI_RUNTIMES:
            containers = f"the node's {named} (CRI, called by nodeconf's enforcer)"
        else:
            containers = f"the node's {named} (OCI runtime, called by nodeconf's enforcer)"
    oci = dict(pairs(facts.get("runtime_config", ""))).get("oci_runtime_version")
    if oci:
        containers += f", its OCI runtime {oci}"
    image = [(IMAGE_KEY, facts[IMAGE_KEY])] if facts.get(IMAGE_KEY) else []
    return [*image, (SCOPE_TITLES[1], containers), (SCOPE_TITLES[2], kubelet)]
