"""What runs in a container both drivers start: the sleeper of a container without a command, and where the
workload programs are unpacked beside the agent.

Source: kubernetes/build/pause (the pause process sleeps); workloads/programs (the suites' programs).
"""

from __future__ import annotations

# A container without a command runs a sleeper; the pause process is one too (kubernetes/build/pause).
SLEEPER: tuple[str, ...] = ("sleep", "infinity")
# The workload programs' directory, relative to the agent's work directory on the node.
PROGRAMS = "workloads/programs"
# Where every node driver puts the agent and the programs on the node (a pod of a cluster mounts them there).
NODE_HOME = "/opt/nodeconf"
PROGRAMS_DIR = f"{NODE_HOME}/{PROGRAMS}"
