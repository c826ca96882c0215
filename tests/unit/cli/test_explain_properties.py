"""Property-based: generated manifests, kubelet configs, flags and mutated workloads/ files all meet the contract.

Contract (tests/unit/cli/explain_support.py): exit 0 with JSON whose cgroup values the kernel accepts, or exit 2 with
one short line; no exception out of main, no run over 5 s. Derandomized with no example database, so CI sees the
same examples every run; the example counts keep the module to a few seconds of CPU.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.cli.explain_support import contract_problems, explain

ROOT = Path(__file__).resolve().parents[3]
WORKLOAD_FILES = sorted(p for p in (ROOT / "workloads").rglob("*.yaml") if "kubelet" not in p.name)
KUBELET_FILES = sorted(p for p in (ROOT / "workloads").rglob("kubelet*/*.yaml"))
# NODECONF_FUZZ_EXAMPLES raises the example count for a longer local hunt; CI keeps the default.
EXAMPLES = int(os.environ.get("NODECONF_FUZZ_EXAMPLES", "50"))
FAST = settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

SUFFIXES = ["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti", "Ei", "e3", "E-2", "e99", "n", "u", "P"]
DIGITS = st.text(alphabet="0123456789", min_size=1, max_size=25)
ODD_TEXT = st.sampled_from(["", "-", ".", "1..2", "٣Gi", "１Gi", "1 Gi", "NaN", "inf", "0x10", "1_000", "1e",
                            "9" * 5000, "9" * 30 + "Ei", "+.5", "-0", "1e308", "1e-308"])


@st.composite
def quantity_text(draw: st.DrawFn) -> str:
    sign = draw(st.sampled_from(["", "", "", "", "", "", "-", "+"]))
    number = draw(DIGITS) + draw(st.sampled_from(["", "", ".", "." + draw(DIGITS)]))
    return sign + number + draw(st.sampled_from(SUFFIXES))


# Mostly well-formed (so the output's ranges are exercised), sometimes anything at all.
ODD_QUANTITY: st.SearchStrategy[Any] = st.one_of(
    ODD_TEXT, st.integers(min_value=-(2**80), max_value=2**80), st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(), st.none(), st.lists(st.integers(), max_size=2),
)
QUANTITY: st.SearchStrategy[Any] = st.one_of(
    quantity_text(), quantity_text(), quantity_text(), st.integers(min_value=0, max_value=2**64), ODD_QUANTITY)
RESOURCE_NAMES = st.sampled_from(["cpu", "memory", "swap", "ephemeral-storage", "hugepages-2Mi", "example.com/x",
                                  "bogus"])
RESOURCES = st.dictionaries(RESOURCE_NAMES, QUANTITY, max_size=2)
NAMES = st.sampled_from(["a", "b", "web", "c", "d", "e", "f", "ns-1", "UPPER", "x" * 300, ""])


@st.composite
def container(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": draw(NAMES), "image": "busybox",
                            "resources": {"requests": draw(RESOURCES), "limits": draw(RESOURCES)}}
    if draw(st.integers(0, 3)) == 0:
        spec["restartPolicy"] = draw(st.sampled_from(["Always", "Never", "bogus"]))
    return spec


@st.composite
def pod_doc(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": draw(st.lists(container(), min_size=1, max_size=3))}
    if draw(st.booleans()):
        spec["initContainers"] = draw(st.lists(container(), max_size=2))
    if draw(st.booleans()):
        spec["overhead"] = draw(RESOURCES)
    if draw(st.booleans()):
        spec["resources"] = {"requests": draw(RESOURCES), "limits": draw(RESOURCES)}
    if draw(st.booleans()):
        spec["priority"] = draw(st.one_of(st.integers(min_value=-(2**40), max_value=2**40), st.text(max_size=3)))
    meta = {"name": draw(NAMES), "namespace": draw(st.sampled_from(["default", "other", "Bad_NS"]))}
    kind = draw(st.sampled_from(["Pod", "Pod", "Pod", "Deployment", "Job", "LimitRange", "ResourceQuota"]))
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": kind, "metadata": meta, "spec": spec}
    if kind == "LimitRange":
        item = {"type": "Container", "default": draw(RESOURCES), "max": draw(RESOURCES)}
        return {"kind": kind, "metadata": meta, "spec": {"limits": [item]}}
    if kind == "ResourceQuota":
        return {"kind": kind, "metadata": meta, "spec": {"hard": draw(RESOURCES)}}
    return {"kind": kind, "metadata": meta, "spec": {"template": {"spec": spec}}}


DURATIONS = st.one_of(
    st.builds(lambda n, u: f"{n}{u}", st.integers(min_value=-5, max_value=10**7),
              st.sampled_from(["ns", "us", "µs", "ms", "s", "m", "h", ""])),
    st.sampled_from(["0", "1.5ms", ".5s", "1h", "9" * 400 + "h", "٣ms", "1ms1us", "abc", ""]),
    st.integers(), st.none(),
)


@st.composite
def kubelet_doc(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"}
    options: dict[str, st.SearchStrategy[Any]] = {
        "memorySwap": st.fixed_dictionaries({"swapBehavior": st.sampled_from(
            ["NoSwap", "LimitedSwap", "WorkloadControlledSwap", "bogus"])}),
        "featureGates": st.dictionaries(st.sampled_from(["CustomCPUCFSQuotaPeriod", "MemoryQoS", "NodeSwap",
                                                         "PodLevelResources"]), st.booleans()),
        "systemReserved": RESOURCES,
        "kubeReserved": RESOURCES,
        "cpuCFSQuotaPeriod": DURATIONS,
        "memoryThrottlingFactor": st.one_of(st.floats(), st.integers()),
        "evictionHard": st.dictionaries(st.sampled_from(["memory.available", "nodefs.available"]),
                                        st.one_of(quantity_text(), st.sampled_from(["10%", "200%", "-1%"]))),
        "maxPods": st.integers(min_value=-5, max_value=2**40),
        "cpuCFSQuota": st.booleans(),
        "memoryReservationPolicy": st.sampled_from(["None", "TieredReservation"]),
    }
    for key in draw(st.lists(st.sampled_from(sorted(options)), max_size=5, unique=True)):
        doc[key] = draw(options[key])
    return doc


FLAG_VALUES = st.one_of(quantity_text(), ODD_TEXT)


@st.composite
def flags(draw: st.DrawFn) -> list[str]:
    argv: list[str] = []
    for flag in draw(st.lists(st.sampled_from(["--memory", "--cpu", "--swap", "--page-size"]), max_size=3)):
        value = draw(st.one_of(FLAG_VALUES, st.sampled_from(["4096", "65536", "3", str(2**70)])))
        argv.append(f"{flag}={value}")
    if draw(st.booleans()):
        argv.append(f"--kubernetes-version={draw(st.sampled_from(['1.34', '1.36', '1.38', '2.0', '']))}")
    if draw(st.booleans()):
        argv.append(f"--cpu-weight-formula={draw(st.sampled_from(['linear', 'nonlinear', 'x']))}")
    return argv


def _check(files: dict[str, str], argv: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="nodeconf-fuzz-") as scratch:
        paths = {}
        for name, text in files.items():
            path = Path(scratch) / name
            path.write_text(text, encoding="utf-8")
            paths[name] = str(path)
        args = [paths[n] for n in files if not n.startswith("kubelet")]
        if "kubelet.yaml" in paths:
            args += ["--kubelet-config", paths["kubelet.yaml"]]
        outcome = explain(*args, *argv)
        assert contract_problems(outcome) == [], (files, argv, outcome.stderr[:300])


def _dump(docs: list[dict[str, Any]]) -> str:
    return yaml.dump_all(docs, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), allow_unicode=True)


@FAST
@given(docs=st.lists(pod_doc(), min_size=1, max_size=4), argv=flags())
def test_generated_manifests_and_flags_meet_the_contract(docs: list[dict[str, Any]], argv: list[str]) -> None:
    _check({"pods.yaml": _dump(docs)}, argv)


WELL_FORMED = st.builds(lambda lead, digits, suffix: lead + digits + suffix, st.sampled_from("123456789"),
                        st.text(alphabet="0123456789", max_size=6),
                        st.sampled_from([x for x in SUFFIXES if x != "e99"]))


@st.composite
def well_formed_pod(draw: st.DrawFn, index: int) -> dict[str, Any]:
    """A Pod the API server would mostly admit: valid names, non-negative quantities of any size."""
    def resources() -> dict[str, str]:
        return draw(st.dictionaries(st.sampled_from(["cpu", "memory", "swap"]), WELL_FORMED, max_size=3))

    containers = [{"name": f"c{i}", "image": "busybox", "resources": {"requests": resources(), "limits": resources()}}
                  for i in range(draw(st.integers(min_value=1, max_value=3)))]
    spec: dict[str, Any] = {"containers": containers}
    if draw(st.booleans()):
        spec["resources"] = {"requests": resources(), "limits": resources()}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{index}"}, "spec": spec}


@FAST
@given(docs=st.integers(min_value=1, max_value=4).flatmap(
    lambda n: st.tuples(*(well_formed_pod(i) for i in range(n)))),
    memory=WELL_FORMED, cpu=WELL_FORMED, swap=st.sampled_from(["LimitedSwap", "WorkloadControlledSwap", "NoSwap"]),
    period=st.integers(min_value=1000, max_value=1_000_000))
def test_well_formed_pods_give_values_the_kernel_accepts(docs: tuple[dict[str, Any], ...], memory: str, cpu: str,
                                                         swap: str, period: int) -> None:
    config = {"kind": "KubeletConfiguration", "memorySwap": {"swapBehavior": swap}, "cpuCFSQuotaPeriod":
              f"{period}us", "featureGates": {"CustomCPUCFSQuotaPeriod": True}}
    _check({"pods.yaml": _dump(list(docs)), "kubelet.yaml": _dump([config])}, [f"--memory={memory}", f"--cpu={cpu}"])


@FAST
@given(config=kubelet_doc(), docs=st.lists(pod_doc(), min_size=1, max_size=2))
def test_generated_kubelet_configs_meet_the_contract(config: dict[str, Any], docs: list[dict[str, Any]]) -> None:
    _check({"pods.yaml": _dump(docs), "kubelet.yaml": _dump([config])}, [])


INSERTS = st.sampled_from(["!!int abc", "!!float abc", "!!timestamp x", "&a", "*a", "*zz", "[" * 200, "{", "- ",
                           "9" * 5000, "٣Gi", "１Gi", "-1Gi", "\t", "\x00", "\ufeff", ": :", "---\n", "&a [*a]",
                           "1e30", "100Ei", "'", '"', "? ", "%YAML 1.1\n", "<<: *a"])


@st.composite
def mutated_workload(draw: st.DrawFn, files: list[Path] = WORKLOAD_FILES) -> tuple[str, str]:
    """One file of workloads/ with up to three mutations (insertions, cuts, duplication, number swaps)."""
    path = draw(st.sampled_from(files))
    text = path.read_text(encoding="utf-8")
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        at = draw(st.integers(min_value=0, max_value=len(text)))
        action = draw(st.sampled_from(["insert", "delete", "duplicate", "replace-number"]))
        if action == "insert":
            text = text[:at] + draw(INSERTS) + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + draw(st.integers(min_value=1, max_value=40)):]
        elif action == "duplicate":
            text = text + "---\n" + text
        else:
            digits = [i for i, ch in enumerate(text) if ch.isdigit()]
            if digits:
                i = draw(st.sampled_from(digits))
                text = text[:i] + draw(st.sampled_from(["0", "-", "99999999999999999999999", "٣", ".", "e9"])) \
                    + text[i + 1:]
    return path.name, text


@FAST
@given(mutated=mutated_workload(), argv=flags())
def test_mutated_workload_files_meet_the_contract(mutated: tuple[str, str], argv: list[str]) -> None:
    _check({mutated[0]: mutated[1]}, argv)


@FAST
@given(config=mutated_workload(KUBELET_FILES))
def test_mutated_kubelet_configs_meet_the_contract(config: tuple[str, str]) -> None:
    _check({"pods.yaml": (ROOT / "workloads/requests-limits/res-demo.yaml").read_text(), "kubelet.yaml": config[1]},
           [])


@settings(max_examples=4, derandomize=True, database=None, deadline=None)
@given(mutated=mutated_workload())
def test_mutated_workloads_as_a_subprocess(mutated: tuple[str, str]) -> None:
    """The real entry point: exit code and stderr as a shell sees them, no traceback text."""
    with tempfile.TemporaryDirectory(prefix="nodeconf-fuzz-") as scratch:
        path = Path(scratch) / mutated[0]
        path.write_text(mutated[1], encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "nodeconf", "explain", str(path)], capture_output=True,
                              text=True, cwd=ROOT, timeout=30, check=False)
    assert done.returncode in (0, 2), done.stderr[-500:]
    assert "Traceback" not in done.stderr
    if done.returncode == 2:
        assert done.stderr.count("\n") == 1 and len(done.stderr) <= 300, done.stderr[:400]
