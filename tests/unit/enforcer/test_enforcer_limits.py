"""Enforcer limits: the longest valid Kubernetes names start (log file names past NAME_MAX are hashed) and two pods
with one uid never share a cgroup (issue 10, item 5)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeconf import names
from nodeconf.enforcer.agent import Agent
from suites.toolkit.builders import container, pod_manifest
from tests.unit.enforcer.enforcer_support import make_agent, tick_until

# The longest names Kubernetes accepts: a pod name is a DNS-1123 subdomain (253), namespace and container names
# are DNS-1123 labels (63) (k8s.io/apimachinery/pkg/util/validation).
LONG_POD = ".".join(["p" * 63, "o" * 63, "d" * 63, "x" * 61])
LONG_NAMESPACE = "n" * 63
LONG_CONTAINER = "c" * 63


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    agent = make_agent(tmp_path)
    try:
        yield agent
    finally:
        agent.shutdown()


def test_log_file_names_fit_name_max() -> None:
    short = names.log_file("default", "res-demo", "hello")
    assert short == "default_res-demo_hello.log"
    longest = names.log_file(LONG_NAMESPACE, LONG_POD, LONG_CONTAINER)
    other = names.log_file(LONG_NAMESPACE, LONG_POD, LONG_CONTAINER[:-1] + "d")
    assert len(LONG_POD) == 253
    assert len(longest.encode()) <= names.NAME_MAX and longest.endswith(".log") and longest != other
    assert longest.startswith(f"{LONG_NAMESPACE}_{LONG_POD[:150]}")


def test_the_longest_valid_names_start(agent: Agent) -> None:
    doc = pod_manifest(container(LONG_CONTAINER, command=["sh", "-c", "echo started; sleep 60"]), name=LONG_POD)
    doc["metadata"]["namespace"] = LONG_NAMESPACE
    result = agent.run_pod(doc)
    assert result["admitted"], result["errors"]
    ref = f"{LONG_NAMESPACE}/{LONG_POD}"
    tick_until(agent, lambda: agent.status(ref)["phase"] == "Running" and "started" in agent.logs(ref))
    assert {c["state"] for c in agent.status(ref)["containers"]} == {"running"}


def test_a_second_pod_with_the_same_uid_is_refused(agent: Agent) -> None:
    uid = "61fc9751-ad7b-4318-9db3-078bbf2e5eb5"
    first = pod_manifest(container("c", command=["sleep", "60"]), name="first")
    second = pod_manifest(container("c", command=["sleep", "60"]), name="second")
    first["metadata"]["uid"] = second["metadata"]["uid"] = uid
    assert agent.run_pod(first)["admitted"]
    tick_until(agent, lambda: agent.status("default/first")["phase"] == "Running")
    refused = agent.run_pod(second)
    assert not refused["admitted"]
    assert refused["errors"] == [
        f"pod default/second: uid {uid} is already used by pod default/first "
        f"(cgroup {agent.pods['default/first'].cgroup}); two pods must not share one uid"]
    assert list(agent.pods) == ["default/first"]
    assert agent.status("default/first")["phase"] == "Running"
