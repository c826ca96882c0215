"""The reference VM: a Debian bookworm node with cgroup v2 and swap, booted by qemu (issue 4), and its variants
(issue 13: Debian release, init=minimal|systemd, runtime=direct|runc|crun; `variant.parse_variant`).

Build an image once (cached under $XDG_CACHE_HOME/nodeconf): `python -m infra.vm.image [--debian R --init I
--runtime X]`; from code: `ensure_image(variant=parse_variant({...}))`.
Boot one for people: `nodeconf node up|status|ssh|down`; for tests: the `reference_vm` fixture.
"""
