"""The seed manifests of `workloads/` as typed pods, and the few variations the suites parametrize over.

Source: DESIGN.md "How checks are written" (deploy the example pod); variations keep every other field as written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from fractions import Fraction
from functools import cache
from pathlib import Path

from nodeconf.loader import KubeObject, load_objects
from nodeconf.manifest import MEMORY, SWAP, Container, LimitRange, Pod, ResourceList, ResourceQuota, Resources
from nodeconf.quantity import Quantity
from nodeconf.resources import locate_tree
from nodeconf.workloads import PROGRAMS_DIR

SCALED_RESOURCES = (MEMORY, SWAP)


@cache
def _workloads() -> Path:
    """The run's workloads/: of the tree whose suites run (nodeconf.resources, as the programs the drivers copy)."""
    return locate_tree().workloads


def workload(relative: str) -> Path:
    """A manifest file under workloads/ (e.g. `requests-limits/res-demo.yaml`)."""
    path = _workloads() / relative
    if not path.is_file():
        raise FileNotFoundError(f"no manifest workloads/{relative}")
    return path


def objects(relative: str) -> list[KubeObject]:
    return load_objects([workload(relative)])


def pods(relative: str) -> list[Pod]:
    return [o for o in objects(relative) if isinstance(o, Pod)]


def pod(relative: str, name: str | None = None) -> Pod:
    """The one pod of a manifest, or the one called `name` in a multi-document manifest."""
    found = [p for p in pods(relative) if name is None or p.name == name]
    if len(found) != 1:
        raise LookupError(f"workloads/{relative}: expected one pod{f' named {name!r}' if name else ''}, "
                          f"found {len(found)}")
    return found[0]


def namespace_objects(relative: str) -> list[LimitRange | ResourceQuota]:
    return [o for o in objects(relative) if isinstance(o, LimitRange | ResourceQuota)]


def renamed(p: Pod, name: str) -> Pod:
    """The same pod under another name (and the uid that name implies)."""
    return replace(p, name=name, uid="")


def with_container(p: Pod, name: str, *, command: Sequence[str] | None = None,
                   requests: Mapping[str, str] | None = None, limits: Mapping[str, str] | None = None) -> Pod:
    """The pod with one container's command or resources replaced (None keeps what the manifest has)."""
    def changed(c: Container) -> Container:
        if c.name != name:
            return c
        resources = Resources(
            requests=c.resources.requests if requests is None else _resource_list(requests),
            limits=c.resources.limits if limits is None else _resource_list(limits),
        )
        return replace(c, command=c.command if command is None else tuple(command), args=c.args
                       if command is None else (), resources=resources)

    if name not in {c.name for c in p.all_containers}:
        raise LookupError(f"pod {p.ref} has no container {name!r}")
    return p.with_containers([changed(c) for c in p.containers], [changed(c) for c in p.init_containers])


def _resource_list(values: Mapping[str, str]) -> dict[str, Quantity]:
    return {k: Quantity.parse(v) for k, v in values.items()}


def memory_divisor(p: Pod, node_memory: int, share: Fraction = Fraction(1, 8)) -> int:
    """The power of two that shrinks the pod's largest memory or swap quantity to `share` of the node's memory.

    The seeds size their examples for 8 GiB nodes; the reference VM has 2 GiB. Dividing every memory and swap
    quantity by the same power of two keeps their ratios (and so every rule) and keeps byte values whole.
    """
    largest = max((q.amount for r in _all_resources(p) for lst in (r.requests, r.limits)
                   for k, q in lst.items() if k in SCALED_RESOURCES), default=Fraction(0))
    divisor = 1
    while largest / divisor > node_memory * share:
        divisor *= 2
    return divisor


def _all_resources(p: Pod) -> list[Resources]:
    return [c.resources for c in p.all_containers] + ([p.resources] if p.resources is not None else [])


def scaled(p: Pod, divisor: int) -> Pod:
    """The pod with every memory and swap request and limit divided by `divisor` (1: unchanged)."""
    if divisor == 1:
        return p

    def shrink(lst: ResourceList) -> dict[str, Quantity]:
        return {k: Quantity.of(q.amount / divisor) if k in SCALED_RESOURCES else q for k, q in lst.items()}

    def resources(r: Resources) -> Resources:
        return Resources(requests=shrink(r.requests), limits=shrink(r.limits))

    return replace(
        p.with_containers([replace(c, resources=resources(c.resources)) for c in p.containers],
                          [replace(c, resources=resources(c.resources)) for c in p.init_containers]),
        resources=resources(p.resources) if p.resources is not None else None,
    )


def fit_to_node(p: Pod, node_memory: int) -> Pod:
    """The seed pod as deployed on this node: scaled down when its memory figures exceed an eighth of the node."""
    return scaled(p, memory_divisor(p, node_memory))




def memhog(mib: int, *, reclaim: bool = False, wait_for: str | None = None) -> list[str]:
    """The command of a container that allocates and touches `mib` MiB at once, then holds it; with `reclaim`
    it first pushes its pages to swap through memory.reclaim and, once swap is full, waits for `wait_for`."""
    return ["python3", f"{PROGRAMS_DIR}/memhog.py", str(mib), *(["--reclaim"] if reclaim else []),
            *(["--wait-for", wait_for] if wait_for else [])]


# `pkill -f` in Python: the workload image (python:slim) has no procps, the VM has both; the same argv runs on
# every node. SIGTERM to every process whose command line contains the word, exit 1 when there is none (pkill's
# codes). The word is spelt out character by character so this command's own command line never contains it.
_STOP = (
    "import os, signal, sys\n"
    "word = ''.join(sys.argv[1:]).encode()\n"
    "found = 0\n"
    "for pid in [p for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()]:\n"
    "    try:\n"
    "        line = open(f'/proc/{pid}/cmdline', 'rb').read().replace(b'\\0', b' ')\n"
    "        if word in line:\n"
    "            os.kill(int(pid), signal.SIGTERM)\n"
    "            found += 1\n"
    "    except OSError:\n"
    "        pass\n"
    "sys.exit(0 if found else 1)\n"
)


def stop_program(word: str) -> list[str]:
    """The argv that sends SIGTERM to every process whose command line contains `word` (like `pkill -f`)."""
    return ["python3", "-c", _STOP, *word]


def forker(limit: int) -> list[str]:
    """The argv that forks up to `limit` waiting children and prints {"forked": k, "error": errno name or ""}."""
    return ["python3", f"{PROGRAMS_DIR}/forker.py", str(limit)]


def hugetlb_toucher(pages: int) -> list[str]:
    """The argv that maps and touches `pages` 2 MiB huge pages one by one and prints {"touched", "end"}."""
    return ["python3", f"{PROGRAMS_DIR}/hugetlb_touch.py", str(pages)]
