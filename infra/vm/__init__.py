"""The reference VM: a Debian bookworm node with cgroup v2 and swap, booted by qemu (issue 4).

Build the image once (cached under $XDG_CACHE_HOME/nodeconf): `python -m infra.vm.image`.
Boot one for people: `nodeconf node up|status|ssh|down`; for tests: the `reference_vm` fixture.
"""
