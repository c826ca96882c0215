"""Variants of the reference node: Debian release, PID 1 and container runtime, each a Recipe (issue 13).

Source: issue 13 items 1-2; package and kernel versions per release from MEASURED.md "Node layers".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from infra.vm.recipe import INITS, Recipe, data_file, default_recipe

RELEASES = ("bullseye", "bookworm", "trixie", "sid")
RUNTIMES = ("direct", "runc", "crun")
VARIANT_OPTIONS = {"debian": RELEASES, "init": INITS, "runtime": RUNTIMES}
# What init=systemd adds: PID 1 and /sbin/init, and the system bus that busctl and transient units use.
SYSTEMD_PACKAGES = ("systemd", "systemd-sysv", "dbus")
# Units and config of the systemd node, installed under /etc/systemd/system (see image._install_systemd).
SYSTEMD_FILES = ("nodeconf-network.service", "nodeconf-swap.service", "nodeconf-ready.service",
                 "journald-nodeconf.conf")
# The development release has neither -updates nor a security suite.
SID_SOURCES = ("deb http://deb.debian.org/debian {suite} main",)


@dataclass(frozen=True)
class Variant:
    """One node variant: Debian release (kernel and userland), init (PID 1) and container runtime."""

    debian: str = "bookworm"
    init: str = "minimal"
    runtime: str = "direct"

    def __post_init__(self) -> None:
        for name, allowed in VARIANT_OPTIONS.items():
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"unknown {name}={value!r}: choose one of {'|'.join(allowed)}")

    @property
    def is_reference(self) -> bool:
        """True for the project's reference node (bookworm, nodeconf's init, nodeconf's launcher)."""
        return self == Variant()

    def label(self) -> str:
        """e.g. trixie-systemd-runc."""
        return f"{self.debian}-{self.init}-{self.runtime}"


def parse_variant(options: Mapping[str, str]) -> Variant:
    """The variant named by node-spec options debian=, init=, runtime= (others ignored); ValueError, one line."""
    return Variant(**{name: options[name] for name in VARIANT_OPTIONS if name in options})


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
