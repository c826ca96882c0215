"""What the reference image is made of, and the cache key derived from it (source: issue 4, MEASURED.md)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from importlib import resources

# Bump when the build steps change in a way the Recipe fields do not show, so cached images are rebuilt.
RECIPE_FORMAT = 2
GUEST_INIT_PATH = "/sbin/nodeconf-init"
READY_MARKER = "NODECONF-READY"
LATER_FIELDS = ("init", "kernel_config_in_root", "optional_boot_modules", "masked_units", "kept_generators",
                "apt_options")


def data_file(name: str) -> str:
    """The text of a data file shipped beside this module (init scripts)."""
    return resources.files("infra.vm").joinpath(name).read_text(encoding="utf-8")


@dataclass(frozen=True)
class Recipe:
    """A reference image: Debian suite, packages, boot modules, disk size (source: MEASURED.md build facts)."""

    suite: str = "bookworm"
    # The suite with its updates and security fixes, as a Debian host's apt sees it (so the versions the
    # cache key is made of are the ones installed).
    sources: tuple[str, ...] = (
        "deb http://deb.debian.org/debian {suite} main",
        "deb http://deb.debian.org/debian {suite}-updates main",
        "deb http://deb.debian.org/debian-security {suite}-security main",
    )
    include: tuple[str, ...] = ("openssh-server", "python3", "procps", "iproute2", "kmod", "util-linux")
    kernel_metapackage: str = "linux-image-amd64"
    busybox_package: str = "busybox-static"
    boot_modules: tuple[str, ...] = (
        "virtio_pci", "virtio_blk", "virtio_net", "crc32c_generic", "ext4", "virtio_rng",
    )
    # merged-usr: /usr merged by mmdebstrap itself, as debootstrap does, instead of the usrmerge package (+perl).
    bootstrap_hooks: tuple[str, ...] = ("merged-usr",)
    dpkg_path_excludes: tuple[str, ...] = (
        "usr/share/doc/*", "usr/share/man/*", "usr/share/info/*", "usr/share/locale/*", "usr/share/lintian/*",
    )
    trim_paths: tuple[str, ...] = (
        "var/cache/apt", "var/lib/apt/lists", "var/cache/debconf/templates.dat-old", "var/log",
    )
    root_disk_mib: int = 1024
    # No journal (the disk is a throw-away snapshot); inode tables zeroed now, not by the guest's ext4lazyinit.
    mkfs_options: tuple[str, ...] = ("-O", "^has_journal", "-E", "lazy_itable_init=0")
    hostname: str = "nodeconf-vm"
    # sshd runs each remote command as `SHELL -c CMD`: dash starts faster than bash under TCG.
    root_shell: str = "/bin/sh"
    scripts: Mapping[str, str] = field(default_factory=dict)
    # Fields below came after format 2: they enter the fingerprint only when they differ from their default,
    # so the reference recipe keeps its fingerprint (and its cached image).
    # PID 1: "minimal" (GUEST_INIT_PATH, our script) or "systemd" (units from scripts["systemd/..."]).
    init: str = "minimal"
    # Copy the kernel's config to /boot/config-<release> in the root, where Debian's kernel package puts it.
    kernel_config_in_root: bool = False
    # Boot modules a kernel may lack without harm (sid's 7.x folds crc32c_generic into crc32c-cryptoapi,
    # which ext4 depends on directly).
    optional_boot_modules: tuple[str, ...] = ()
    # init=systemd: units masked in /etc/systemd/system (what a node VM does not need at boot), and the system
    # generators that still run; every other generator the packages ship is masked (systemd.generator(7)).
    masked_units: tuple[str, ...] = ()
    kept_generators: tuple[str, ...] = ()
    # apt options for resolving and bootstrapping this suite, e.g. sid's Acquire::Check-Valid-Until=false.
    apt_options: tuple[str, ...] = ()

    def fingerprint(self) -> str:
        """A stable hash of every recipe field and script text (later fields only when not at their default)."""
        body = asdict(self)
        for later in fields(self):
            if later.name in LATER_FIELDS and body[later.name] == later.default:
                del body[later.name]
        body["format"] = RECIPE_FORMAT
        blob = json.dumps(body, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()


def default_recipe() -> Recipe:
    """The project's reference recipe, with the init scripts shipped in this package."""
    return Recipe(scripts={
        "guest_init.sh": data_file("guest_init.sh"),
        "initramfs_init.sh": data_file("initramfs_init.sh"),
        "sshd_config": data_file("guest_sshd_config.txt"),
        "fstab": data_file("guest_fstab.txt"),
    })


def cache_key(recipe: Recipe, package_versions: Mapping[str, str]) -> str:
    """The image cache key: recipe fingerprint plus the exact package versions that go into the image."""
    pinned = json.dumps(sorted(package_versions.items())).encode()
    digest = hashlib.sha256(recipe.fingerprint().encode() + b"\0" + pinned).hexdigest()
    return f"{recipe.suite}-{digest[:16]}"


_DEPENDS = re.compile(r"^\s*Depends:\s*(linux-image-\S+)\s*$", re.MULTILINE)


def kernel_package_from_depends(apt_cache_depends: str) -> str:
    """The versioned kernel package a metapackage depends on, from `apt-cache depends` output."""
    found = _DEPENDS.findall(apt_cache_depends)
    if not found:
        raise ValueError("no 'Depends: linux-image-...' line in apt-cache depends output")
    return str(found[0])


def candidate_versions(apt_cache_policy: str) -> dict[str, str]:
    """Package → candidate version, from the output of `apt-cache policy PKG...`."""
    versions: dict[str, str] = {}
    package = ""
    for line in apt_cache_policy.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            package = line[:-1]
        elif package and line.strip().startswith("Candidate:"):
            versions[package] = line.split(":", 1)[1].strip()
    return versions


def kernel_release(kernel_package: str) -> str:
    """The `uname -r` of a Debian kernel package name, e.g. linux-image-6.1.0-57-amd64 → 6.1.0-57-amd64."""
    prefix = "linux-image-"
    if not kernel_package.startswith(prefix) or len(kernel_package) == len(prefix):
        raise ValueError(f"not a Debian kernel package name: {kernel_package!r}")
    return kernel_package[len(prefix):]


def insmod_order(show_depends_outputs: Iterable[str]) -> list[str]:
    """Module files in load order from `modprobe --show-depends` outputs, each file once."""
    order: list[str] = []
    for output in show_depends_outputs:
        for line in output.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "insmod" and parts[1] not in order:
                order.append(parts[1])
    return order


def kernel_part_packages(apt_cache_depends: str, release: str) -> list[str]:
    """The packages a split kernel package depends on for the same release (sid: linux-binary-R, linux-modules-R).

    Debian's 6.1 and 6.12 kernel packages carry everything themselves and name none; the cache key gains no entry.
    """
    parts = []
    for line in apt_cache_depends.splitlines():
        words = line.split()
        if len(words) == 2 and words[0] in ("Depends:", "PreDepends:") and words[1].startswith("linux-") \
                and words[1].endswith(f"-{release}") and words[1] not in parts:
            parts.append(words[1])
    return parts


def select_boot_modules(show_depends: Mapping[str, str | None], optional: Iterable[str]) -> list[str]:
    """Module files in load order; a module the kernel lacks (None: modprobe found it neither as a file nor in
    modules.builtin) is an error unless optional. Built-in modules print `builtin NAME` and add no file."""
    allowed = set(optional)
    missing = [name for name, output in show_depends.items() if output is None and name not in allowed]
    if missing:
        raise ValueError(f"kernel has no module {', '.join(missing)} (neither a module file nor built in)")
    return insmod_order(output for output in show_depends.values() if output is not None)
