"""An init container killed by the OOM killer: terminated with exit code 137 and reason OOMKilled, the regular
container never started.

Source: upstream test/e2e_node/oomkiller_linux_test.go "OOMKiller [LinuxOnly] [NodeConformance]" / "init container"
(a pod with restartPolicy Never whose init container is limited to 15Mi and allocates beyond it; the init
container's status must say OOMKilled). nodeconf's init container runs memhog for 96 MiB under a 32Mi limit (cpu
500m, enough for python under emulation); exit code and reason are upstream's expectation and the article's
(137 = 128 + SIGKILL), not the oracle's.

Guarantee relied on: a charge above memory.max that reclaim cannot satisfy invokes the memcg OOM killer, which
SIGKILLs the cgroup's only task (kernel mm/oom_kill.c; the event counted in memory.events oom_kill), and the
kubelet reports a container whose cgroup saw an OOM kill as terminated with reason OOMKilled (CRI ContainerStatus
reason from the runtime's OOM event); an init container that fails under restartPolicy Never is not restarted and
the regular containers never start (KEP-753 / core/v1 init containers).
"""

from __future__ import annotations

import pytest

from nodeconf.fixtures.node import Deploy
from nodeconf.nodes.base import PodStatus
from nodeconf.semantics.expectation import Expected
from suites.toolkit.builders import container, pod
from suites.toolkit.checks import check_admission, deploy_pods
from suites.toolkit.compare import assert_matches, compare_reason, compare_value
from suites.toolkit.kubelet import Kubelet, Oracle
from suites.toolkit.pods import memhog

pytestmark = [pytest.mark.independent, pytest.mark.upstream_e2e(
    file="test/e2e_node/oomkiller_linux_test.go",
    case="OOMKiller [LinuxOnly] [NodeConformance] / init container / "
         "The containers terminated by OOM killer should have the reason set to OOMKilled")]

RULE = ("upstream oomkiller_linux_test.go verifyReasonForOOMKilledContainer: reason OOMKilled; exit code 128 + 9 "
        "(SIGKILL from the memcg OOM killer)")
NEVER = "core/v1 init containers under restartPolicy Never: a failed init container ends the pod, none restarts"
LIMITS = {"cpu": "500m", "memory": "32Mi"}


def test_init_container_oom_killed(deploy: Deploy, oracle: Oracle, kubelet: Kubelet) -> None:
    """The init container ends OOMKilled with exit code 137, is not restarted, and the app container never runs."""
    workload = pod(container("app", LIMITS, LIMITS, command=["sleep", "infinity"]), name="oom-init",
                   init=[container("init", LIMITS, LIMITS, command=memhog(96))], restartPolicy="Never")
    deployed = deploy_pods(deploy, oracle, kubelet, [workload])
    handle = deployed.handle("oom-init")
    check_admission(handle, deployed.expected("oom-init"))

    def ended(s: PodStatus) -> bool:
        return s.container("init").state == "terminated"

    status = handle.wait_for(ended, timeout=90, what="the init container terminated")
    init, app = status.container("init"), status.container("app")
    # The kernel's count, read only to name the cause of another reason (the pod cgroup of a pod ended may be gone).
    oom_kills = 0 if init.reason == "OOMKilled" else handle.evidence().pod_cgroup.keyed("memory.events").get(
        "oom_kill", 0)
    assert_matches("pod oom-init init container", [
        compare_reason("oom-init", "init", "(status)", "status reason", Expected("OOMKilled", RULE), init.reason,
                       (init.reason, init.exit_code), oracle.facts, oom_kills),
        compare_value("oom-init", "init", "(status)", "exit code", Expected("137", RULE), str(init.exit_code)),
        compare_value("oom-init", "init", "(status)", "restart count", Expected("0", NEVER), str(init.restart_count)),
        compare_value("oom-init", "app", "(status)", "app container ran", Expected("no", NEVER),
                      "yes" if app.state in ("running", "terminated") else "no"),
    ])
