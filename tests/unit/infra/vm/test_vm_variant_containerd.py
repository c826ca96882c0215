"""The containerd variants' recipe (issue 28 item 4): Debian's containerd package, the overlay module loaded at boot
(the snapshotter's file system; the node has no /lib/modules), and under systemd the runc runtime table a kubeadm
node's config holds (`SystemdCgroup = true`, with runc's `runtime_type` restated), appended to Debian's file."""

from __future__ import annotations

import tomllib

import pytest

from nodeconf.infra.vm.recipe import default_recipe
from nodeconf.infra.vm.variant import CONTAINERD_CONFIG, RELEASES, Variant, recipe_for

APPENDED = f"append/{CONTAINERD_CONFIG}"


@pytest.mark.parametrize("debian", RELEASES)
def test_a_containerd_node_has_the_package_and_loads_overlay(debian: str) -> None:
    recipe = recipe_for(Variant(debian, "systemd", "containerd"))
    assert "containerd" in recipe.include
    assert recipe.boot_modules == (*default_recipe().boot_modules, "overlay")


def test_under_systemd_runc_gets_the_systemd_cgroup_driver() -> None:
    appended = recipe_for(Variant("trixie", "systemd", "containerd")).scripts[APPENDED]
    runc = tomllib.loads(appended)["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["runc"]
    assert runc == {"runtime_type": "io.containerd.runc.v2", "options": {"SystemdCgroup": True}}


def test_other_runtimes_neither_append_nor_load_overlay() -> None:
    recipe = recipe_for(Variant("trixie", "systemd", "runc"))
    assert APPENDED not in recipe.scripts
    assert "overlay" not in recipe.boot_modules
