"""Provisioning: the reference VM (image recipe, build, cache) and the qemu machine that boots it."""
