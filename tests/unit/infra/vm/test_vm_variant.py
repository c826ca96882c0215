"""Node variants (issue 13 items 1-2): parsing, the recipe of each variant, the reference recipe unchanged."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from nodeconf.infra.vm import apt as apt_module
from nodeconf.infra.vm.qemu import kernel_cmdline
from nodeconf.infra.vm.recipe import default_recipe
from nodeconf.infra.vm.variant import RELEASES, RUNTIMES, SYSTEMD_PACKAGES, Variant, parse_variant, recipe_for

# The reference recipe's fingerprint before variants existed: changing it rebuilds every cached reference image,
# so a change here must be deliberate (bump it together with RECIPE_FORMAT or the scripts; last: guest_init.sh
# remounts cgroup2 with favordynmods, issue 31).
REFERENCE_FINGERPRINT = "00c5e59c9d7281d214f9252b0d842459e999e6de5cce77050f980d2ac47d9dca"
ALL = [Variant(d, i, r) for d, i, r in itertools.product(RELEASES, ("minimal", "systemd"), RUNTIMES)
       if (i, r) != ("minimal", "containerd")]


def test_defaults_are_the_reference_node() -> None:
    assert parse_variant({}) == Variant("bookworm", "minimal", "direct")
    assert parse_variant({"memory": "2Gi", "fault": "x"}).is_reference


def test_parse_takes_each_option() -> None:
    assert parse_variant({"debian": "trixie", "init": "systemd", "runtime": "crun"}) == Variant("trixie", "systemd",
                                                                                               "crun")


@pytest.mark.parametrize(("options", "message"), [
    ({"debian": "buster"}, "unknown debian='buster': choose one of bullseye|bookworm|trixie|sid"),
    ({"init": "openrc"}, "unknown init='openrc': choose one of minimal|systemd"),
    ({"runtime": "docker"}, "unknown runtime='docker': choose one of direct|runc|crun"),
    ({"debian": ""}, "unknown debian=''"),
])
def test_unknown_values_are_one_line(options: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("|", r"\|")) as raised:
        parse_variant(options)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("debian", RELEASES)
def test_containerd_without_systemd_is_refused_in_one_line(debian: str) -> None:
    with pytest.raises(ValueError, match=r"^runtime=containerd needs init=systemd: ") as raised:
        parse_variant({"debian": debian, "runtime": "containerd"})
    assert "\n" not in str(raised.value)


def test_reference_recipe_keeps_its_fingerprint() -> None:
    assert default_recipe().fingerprint() == REFERENCE_FINGERPRINT
    assert recipe_for(Variant()).fingerprint() == REFERENCE_FINGERPRINT


def test_every_variant_has_its_own_fingerprint() -> None:
    assert len({recipe_for(v).fingerprint() for v in ALL}) == len(ALL)


@pytest.mark.parametrize("variant", [v for v in ALL if not v.is_reference], ids=Variant.label)
def test_variant_recipe_packages_and_init(variant: Variant) -> None:
    recipe = recipe_for(variant)
    base = default_recipe().include
    assert recipe.suite == variant.debian
    assert recipe.include[:len(base)] == base
    extra = set(recipe.include[len(base):])
    expected = (set(SYSTEMD_PACKAGES) if variant.init == "systemd" else set()) | \
        ({variant.runtime} if variant.runtime != "direct" else set())
    assert extra == expected
    assert recipe.init == variant.init
    assert ("guest_init.sh" in recipe.scripts) == (variant.init == "minimal")
    assert any(name.startswith("systemd/") for name in recipe.scripts) == (variant.init == "systemd")
    assert recipe.kernel_config_in_root


def test_sid_has_no_updates_or_security_suite() -> None:
    assert recipe_for(Variant("sid")).sources == ("deb http://deb.debian.org/debian {suite} main",)
    assert len(recipe_for(Variant("bullseye")).sources) == 3


def test_systemd_command_line_boots_systemd_on_the_unified_hierarchy() -> None:
    args = kernel_cmdline(init="systemd").split()
    assert "init=/lib/systemd/systemd" in args and "systemd.unified_cgroup_hierarchy=1" in args
    assert "cgroup_no_v1=all" in args
    assert kernel_cmdline().split()[3] == "init=/sbin/nodeconf-init"


def test_only_sid_accepts_an_expired_release_file() -> None:
    assert recipe_for(Variant("sid", "systemd", "runc")).apt_options == ("Acquire::Check-Valid-Until=false",)
    assert all(recipe_for(Variant(d)).apt_options == () for d in RELEASES if d != "sid")


def test_private_apt_calls_carry_the_recipe_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "apt" / "sid"
    root.mkdir(parents=True)
    # The lists are current: no apt-get update runs.
    (root / "updated").write_text("deb http://deb.debian.org/debian sid main\n")
    monkeypatch.setattr(apt_module, "host_has_suite", lambda suite: False)
    apt = apt_module.apt_for("sid", ("deb http://deb.debian.org/debian {suite} main",), tmp_path,
                             options=("Acquire::Check-Valid-Until=false",))
    assert apt.options[-2:] == ("-o", "Acquire::Check-Valid-Until=false")


def test_bullseye_keeps_a_split_usr() -> None:
    assert recipe_for(Variant("bullseye", "systemd", "runc")).bootstrap_hooks == ()
    assert all(recipe_for(Variant(d, "systemd")).bootstrap_hooks == ("merged-usr",) for d in RELEASES
               if d != "bullseye")
