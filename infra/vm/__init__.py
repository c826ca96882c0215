"""The reference VM: a Debian bookworm node with cgroup v2 and swap, booted by qemu (issue 4)."""
