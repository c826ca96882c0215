"""nodeconf: a Kubernetes node conformance suite for cgroup v2 resource semantics."""
