"""The image recipe of each reference-node variant (Debian release, PID 1, container runtime; issue 13).

Source: issue 13 items 1-2; package and kernel versions per release from MEASURED.md "Node layers".
"""

from __future__ import annotations

import dataclasses

from infra.vm.recipe import Recipe, data_file, default_recipe
from nodeconf.node_variant import RELEASES, RUNTIMES, Variant, parse_variant

# What init=systemd adds: PID 1 and /sbin/init, and the system bus that busctl and transient units use.
SYSTEMD_PACKAGES = ("systemd", "systemd-sysv", "dbus")
# Units and config of the systemd node, installed under /etc/systemd/system (see image._install_systemd).
SYSTEMD_FILES = ("nodeconf-network.service", "nodeconf-swap.service", "nodeconf-ready.service",
                 "journald-nodeconf.conf")
# The development release has neither -updates nor a security suite.
SID_SOURCES = ("deb http://deb.debian.org/debian {suite} main",)

__all__ = ["RELEASES", "RUNTIMES", "Variant", "parse_variant", "recipe_for"]


def recipe_for(variant: Variant) -> Recipe:
    """The image recipe of a variant; the reference variant's is exactly default_recipe() (same fingerprint)."""
    recipe = default_recipe()
    if variant.is_reference:
        return recipe
    include = list(recipe.include)
    scripts = dict(recipe.scripts)
    if variant.init == "systemd":
        include += SYSTEMD_PACKAGES
        del scripts["guest_init.sh"]
        scripts["fstab"] = data_file("systemd/fstab")
        scripts.update({f"systemd/{name}": data_file(f"systemd/{name}") for name in SYSTEMD_FILES})
    if variant.runtime != "direct":
        include.append(variant.runtime)
    return dataclasses.replace(
        recipe, suite=variant.debian, sources=SID_SOURCES if variant.debian == "sid" else recipe.sources,
        include=tuple(include), scripts=scripts, init=variant.init, kernel_config_in_root=True,
        optional_boot_modules=("crc32c_generic",),
    )
