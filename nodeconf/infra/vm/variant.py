"""The image recipe of each reference-node variant (Debian release, PID 1, container runtime; issue 13).

Source: issue 13 items 1-2; package and kernel versions per release from MEASURED.md "Node layers".
"""

from __future__ import annotations

import dataclasses

from infra.vm.recipe import Recipe, data_file, default_recipe
from nodeconf.node_variant import RELEASES, RUNTIMES, Variant, parse_variant

# What init=systemd adds: PID 1 and /sbin/init, and the system bus that busctl and transient units use.
SYSTEMD_PACKAGES = ("systemd", "systemd-sysv", "dbus")
# Units and config of the systemd node: data file → its place under /etc/systemd (see systemd_root.py).
SYSTEMD_FILES = {
    "nodeconf-network.service": "system/nodeconf-network.service",
    "nodeconf-swap.service": "system/nodeconf-swap.service",
    "nodeconf-ready.service": "system/nodeconf-ready.service",
    "nodeconf.slice": "system/nodeconf.slice",
    "ssh-nodeconf.conf": "system/ssh.service.d/nodeconf.conf",
    "system-nodeconf.conf": "system.conf.d/nodeconf.conf",
}
# What a node VM does not need at boot, masked: each unit costs an exec or a mount under TCG (found with
# systemd-analyze blame / critical-chain; the boot times are in docs/node-variants.md). Names a release lacks are
# harmless. Kept: systemd itself, dbus (the enforcer's transient units), tmpfiles-setup, sshd.
SYSTEMD_MASKED = (
    # consoles to log in on, login sessions (sshd runs without PAM), password agents
    "getty.target", "systemd-logind.service",
    "systemd-ask-password-console.path", "systemd-ask-password-wall.path",
    # host keys are made at build time (sshd-keygen would order sshd after basic.target even when it skips)
    "sshd-keygen.service",
    # periodic jobs (apt, man-db, fstrim, dpkg-db-backup, tmpfiles-clean) and e2scrub
    "timers.target", "e2scrub_reap.service",
    # API file systems nothing on the node uses (the cgroup2, /proc, /sys, /dev, /run mounts are PID 1's own)
    "dev-hugepages.mount", "dev-mqueue.mount", "sys-kernel-debug.mount", "sys-kernel-tracing.mount",
    "sys-kernel-config.mount", "sys-fs-fuse-connections.mount", "proc-sys-fs-binfmt_misc.automount",
    "run-lock.mount", "systemd-binfmt.service",
    # modules and static device nodes: the initramfs loaded the boot modules, there is no udev
    "modprobe@.service", "systemd-modules-load.service", "kmod-static-nodes.service",
    "systemd-tmpfiles-setup-dev-early.service", "systemd-tmpfiles-setup-dev.service",
    # the root is mounted read-write by the kernel; sysctl.d stays at the kernel defaults, as with init=minimal
    "systemd-remount-fs.service", "systemd-sysctl.service",
    # first boot, /usr updates, entropy, journal flush: the snapshot disk is fixed
    "systemd-firstboot.service", "systemd-machine-id-commit.service", "systemd-update-done.service",
    "ldconfig.service", "systemd-sysusers.service", "systemd-journal-catalog-update.service",
    "systemd-journal-flush.service", "systemd-random-seed.service",
    # TPM, EFI, hibernation, pstore: the VM has none
    "systemd-pcrmachine.service", "systemd-pcrphase-sysinit.service", "systemd-pcrphase.service",
    "systemd-tpm2-setup-early.service", "systemd-tpm2-setup.service", "systemd-hibernate-clear.service",
    "systemd-pstore.service",
    # the journal: nothing on the node reads it, and journald's start (≈1.6 s) held back sysinit.target (tmpfiles-setup
    # is ordered after it). Without its sockets PID 1 logs to the kernel ring buffer (dmesg) and a service's
    # stdout/stderr go to /dev/null (DefaultStandardOutput=null, systemd/system-nodeconf.conf).
    "systemd-journald.service", "systemd-journald.socket", "systemd-journald-dev-log.socket",
    "systemd-journald-audit.socket",
    # socket-activated services a node VM never asks for
    "systemd-creds.socket", "systemd-hostnamed.socket", "systemd-initctl.socket", "systemd-pcrextend.socket",
    "systemd-pcrlock.socket", "systemd-sysext.socket",
)
# The one generator a node VM needs: /etc/fstab's /tmp (getty, gpt-auto, sysv, ssh, tpm2 ... are masked).
SYSTEMD_GENERATORS = ("systemd-fstab-generator",)
# The development release has neither -updates nor a security suite. Its Release file carries a Valid-Until a
# week ahead; the archive mirror this machine reaches serves one that expired weeks ago, which apt refuses: accept
# it (the packages are still checked against the signed Release's hashes; only the freshness check is off).
SID_SOURCES = ("deb http://deb.debian.org/debian {suite} main",)
SID_APT_OPTIONS = ("Acquire::Check-Valid-Until=false",)
# runtime=containerd: Debian's /etc/containerd/config.toml (CRI enabled, CNI paths) plus what a kubeadm node adds:
# the systemd cgroup driver for runc, matching the kubelet's cgroupDriver=systemd (Kubernetes docs "Container
# Runtimes", containerd: `SystemdCgroup = true` in the runc runtime's options, in the full `containerd config
# default` that kubeadm's guide starts from). That default holds `runtime_type = "io.containerd.runc.v2"` in the
# same runtime table; Debian's short file does not, and a runc table with only options replaces the built-in one,
# so the line is restated (measured on trixie's 1.7.24: without it RunPodSandbox fails "container.Runtime.Name must
# be set"). Appended as its own tables, which TOML allows after [plugins]; the config `version = 2` form, which
# containerd 2.x still reads (and migrates). Only with init=systemd: under the minimal init containerd keeps its
# cgroupfs default.
CONTAINERD_CONFIG = "etc/containerd/config.toml"
CONTAINERD_SYSTEMD_CGROUP = """
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
"""
# containerd's overlayfs snapshotter needs the overlay file system (containerd.service's ExecStartPre modprobe's it,
# but the node has no /lib/modules): loaded at boot with the others (measured: without it every RunPodSandbox fails
# "failed to mount rootfs component: no such device").
CONTAINERD_MODULES = ("overlay",)
# bullseye predates the merged /usr mmdebstrap's hook sets up (its essential step fails there): /usr stays split,
# as bullseye's own minbase is.
SPLIT_USR_RELEASES = ("bullseye",)

__all__ = ["RELEASES", "RUNTIMES", "Variant", "parse_variant", "recipe_for"]


def recipe_for(variant: Variant) -> Recipe:
    """The image recipe of a variant; the reference variant's is exactly default_recipe() (same fingerprint)."""
    recipe = default_recipe()
    if variant.is_reference:
        return recipe
    include = list(recipe.include)
    scripts = dict(recipe.scripts)
    masked: tuple[str, ...] = ()
    generators: tuple[str, ...] = ()
    if variant.init == "systemd":
        include += SYSTEMD_PACKAGES
        del scripts["guest_init.sh"]
        scripts["fstab"] = data_file("systemd/fstab")
        scripts.update({f"systemd/{place}": data_file(f"systemd/{name}") for name, place in SYSTEMD_FILES.items()})
        masked, generators = SYSTEMD_MASKED, SYSTEMD_GENERATORS
    if variant.runtime != "direct":
        include.append(variant.runtime)
    boot_modules = recipe.boot_modules
    if variant.runtime == "containerd":
        boot_modules += CONTAINERD_MODULES
        if variant.init == "systemd":
            scripts[f"append/{CONTAINERD_CONFIG}"] = CONTAINERD_SYSTEMD_CGROUP
    return dataclasses.replace(
        recipe, suite=variant.debian, sources=SID_SOURCES if variant.debian == "sid" else recipe.sources,
        include=tuple(include), scripts=scripts, init=variant.init, kernel_config_in_root=True,
        optional_boot_modules=("crc32c_generic",), boot_modules=boot_modules, masked_units=masked,
        kept_generators=generators,
        apt_options=SID_APT_OPTIONS if variant.debian == "sid" else (),
        bootstrap_hooks=() if variant.debian in SPLIT_USR_RELEASES else recipe.bootstrap_hooks,
    )
