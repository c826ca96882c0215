"""Build and cache the reference VM image, or a variant of it, from Debian packages.

Source: issue 4 and issue 13 (variants), MEASURED.md build facts.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from infra.vm import paths
from infra.vm.apt import HOST_LISTS, Apt, AptError, apt_for
from infra.vm.bootfiles import build_boot
from infra.vm.cache_files import locked, make_private, open_for_writing, write_atomically
from infra.vm.hostrun import ImageBuildError, run_tool
from infra.vm.progress import StepPrinter
from infra.vm.qemu import kernel_cmdline, lsm_without_bpf, with_hugepage_pool
from infra.vm.recipe import (
    GUEST_INIT_PATH,
    READY_MARKER,
    Recipe,
    cache_key,
    candidate_versions,
    kernel_package_from_depends,
    kernel_part_packages,
    kernel_release,
)
from infra.vm.state import list_states
from infra.vm.systemd_root import install_systemd
from infra.vm.variant import RELEASES, RUNTIMES, Variant, parse_variant, recipe_for
from nodeconf.errors import InfrastructureError
from nodeconf.node_variant import INITS

__all__ = ["ImageBuildError", "VmImage", "ensure_image", "prune_images"]
Progress = Callable[[str], None]
MANIFEST = "manifest.json"
BUILD_TOOLS = ("apt-get", "apt-cache", "dpkg-deb", "mmdebstrap", "depmod", "modprobe", "cpio", "mkfs.ext4",
               "ssh-keygen", "zstd")



@dataclass(frozen=True)
class VmImage:
    """A bootable image: boot files, root disk, the client key and the pinned guest host key.

    The reference recipe makes one; another provider (a vendor's kernel and disk) fills the same fields,
    with its own kernel command line and the console line its guest prints once SSH is up.
    """

    directory: Path
    key: str
    kernel: Path
    initrd: Path
    root_disk: Path
    client_key: Path
    host_public_key: str
    kernel_release: str
    cmdline: str = field(default_factory=kernel_cmdline)
    ready_marker: str = READY_MARKER
    variant: Variant = field(default_factory=Variant)

    @classmethod
    def load(cls, directory: Path) -> VmImage:
        """The image described by the manifest in a finished image directory (older ones: the reference node)."""
        manifest = json.loads((directory / MANIFEST).read_text())
        return cls(
            directory=directory,
            key=manifest["key"],
            kernel=directory / "vmlinux",
            initrd=directory / "initrd.img",
            root_disk=directory / "root.img",
            client_key=directory / "id_ed25519",
            host_public_key=(directory / "ssh_host_ed25519_key.pub").read_text().strip(),
            kernel_release=manifest["kernel_release"],
            cmdline=with_hugepage_pool(manifest["cmdline"]) if manifest.get("cmdline") else kernel_cmdline(),
            variant=Variant(**manifest.get("variant", {})),
        )


def check_host() -> None:
    """Fail with one line naming the missing tools (or root) needed to build the image."""
    missing = [tool for tool in BUILD_TOOLS if shutil.which(tool) is None]
    if missing:
        raise ImageBuildError(f"missing host tools: {' '.join(missing)}; run: bash infra/install-host.sh")
    if os.geteuid() != 0:
        raise ImageBuildError("building the reference image needs root (mmdebstrap --mode=root, file ownership)")


def resolve_versions(recipe: Recipe, apt: Apt) -> dict[str, str]:
    """The exact package versions the image would contain, from the release's apt cache (one key input)."""
    try:
        depends = run_tool(apt.argv("apt-cache", "depends", recipe.kernel_metapackage))
        kernel_package = kernel_package_from_depends(depends)
        parts = kernel_part_packages(run_tool(apt.argv("apt-cache", "depends", kernel_package)),
                                     kernel_release(kernel_package))
    except (ImageBuildError, ValueError) as err:
        raise ImageBuildError(f"cannot resolve the kernel package ({err}); run: apt-get update") from err
    packages = [kernel_package, *parts, recipe.busybox_package, *recipe.include]
    versions = candidate_versions(run_tool(apt.argv("apt-cache", "policy", *packages)))
    unknown = [p for p in packages if versions.get(p, "(none)") == "(none)"]
    if unknown:
        raise ImageBuildError(f"apt has no candidate for {' '.join(unknown)}; run: apt-get update")
    versions["kernel-package"] = kernel_package
    return versions


def apt_lists_signature(lists_dir: Path | None = None) -> str:
    """A hash of the apt package lists' names, sizes and times: it changes exactly when apt-get update does."""
    lists_dir = lists_dir or HOST_LISTS
    try:
        entries = sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in lists_dir.iterdir() if e.is_file())
    except OSError:
        entries = []
    return hashlib.sha256(json.dumps(entries).encode()).hexdigest()


def cached_versions(recipe: Recipe, images: Path, apt: Apt) -> dict[str, str]:
    """resolve_versions(), remembered in the cache until the apt lists change (apt-cache takes ≈1 s a call)."""
    memo = images / ("resolved-versions.json" if not apt.options else f"resolved-versions-{recipe.suite}.json")
    signature = hashlib.sha256((recipe.fingerprint() + apt_lists_signature(apt.lists_dir)).encode()).hexdigest()
    with contextlib.suppress(OSError, ValueError):
        remembered = json.loads(memo.read_text())
        if remembered.get("signature") == signature:
            return dict(remembered["versions"])
    versions = resolve_versions(recipe, apt)
    with contextlib.suppress(OSError):
        images.mkdir(parents=True, exist_ok=True)
        write_atomically(memo, json.dumps({"signature": signature, "versions": versions}).encode(), 0o644)
    return versions


def ensure_image(cache_dir: Path | None = None, progress: Progress | None = None,
                 recipe: Recipe | None = None, *, variant: Variant | None = None) -> VmImage:
    """The cached image of a variant (default: the reference node) or recipe, for the package versions apt
    offers now; built once (locked across processes)."""
    say = progress or (lambda _message: None)
    if recipe is not None and variant is not None:
        raise ValueError("give a recipe or a variant, not both")
    variant = variant or Variant()
    recipe = recipe or recipe_for(variant)
    images = paths.images_dir(cache_dir)
    try:
        apt = apt_for(recipe.suite, recipe.sources, cache_dir, say, recipe.apt_options)
    except AptError as err:
        raise ImageBuildError(str(err)) from err
    versions = cached_versions(recipe, images, apt)
    key = cache_key(recipe, versions)
    target = images / key
    if (target / MANIFEST).is_file():
        say(f"image {key} cached in {target}")
        make_private(target / "root.img")  # built before its host key was kept private (issue 26 item 10)
        return VmImage.load(target)
    images.mkdir(parents=True, exist_ok=True)
    with locked(images / f"{key}.lock"):
        if not (target / MANIFEST).is_file():
            check_host()
            _build(recipe, variant, apt, versions, key, target, say)
    return VmImage.load(target)


def _build(recipe: Recipe, variant: Variant, apt: Apt, versions: dict[str, str], key: str, target: Path,
           say: Progress) -> None:
    """Build the image into a scratch directory and move it into place; the scratch is removed on failure."""
    started = time.monotonic()
    work = target.parent / f".{key}.build-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        say(f"building image {key} for {variant.label()} (root file system and kernel in parallel)")
        run_tool(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "nodeconf-client", "-f",
                  str(work / "id_ed25519")])
        with ThreadPoolExecutor(max_workers=2) as pool:
            rootfs = pool.submit(_bootstrap_rootfs, recipe, work / "rootfs", say)
            boot = pool.submit(build_boot, recipe, apt, versions, work, say)
            release = boot.result()
            rootfs.result()
        _customize(recipe, work / "rootfs", work, release)
        installed = installed_versions((work / "rootfs" / "var/lib/dpkg/status").read_text(), recipe.include)
        say(f"making root disk ({recipe.root_disk_mib} MiB ext4)")
        make_root_disk(recipe, work / "rootfs", work / "root.img")
        _remove_tree(work / "rootfs")
        manifest = {"key": key, "kernel_release": release, "versions": versions, "installed": installed,
                    "build_seconds": round(time.monotonic() - started, 1)}
        if not variant.is_reference:
            manifest["variant"] = dataclasses.asdict(variant)
            config = work / f"config-{release}"
            lsm = lsm_without_bpf(config.read_text()) if recipe.init == "systemd" and config.is_file() else ()
            manifest["cmdline"] = kernel_cmdline(lsm, init=recipe.init)
        (work / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        work.rename(target)
        say(f"image {key} built in {manifest['build_seconds']} s: {target}")
    finally:
        if work.exists():
            _remove_tree(work)


def _bootstrap_rootfs(recipe: Recipe, root: Path, say: Progress) -> None:
    """A minimal Debian root file system with the recipe's packages (mmdebstrap: ≈30 s, debootstrap ≈60 s)."""
    say(f"mmdebstrap --variant=minbase {recipe.suite} ({', '.join(recipe.include)})")
    excludes = [f"--dpkgopt=path-exclude=/{pattern}" for pattern in recipe.dpkg_path_excludes]
    hooks = [f"--hook-dir=/usr/share/mmdebstrap/hooks/{hook}" for hook in recipe.bootstrap_hooks]
    # NAME=VALUE as apt.conf(5) writes it: NAME "VALUE".
    hooks += ['--aptopt={} "{}"'.format(*option.split("=", 1)) for option in recipe.apt_options]
    sources = [line.format(suite=recipe.suite) for line in recipe.sources]
    run_tool(["mmdebstrap", "--mode=root", "--variant=minbase", f"--include={','.join(recipe.include)}",
              *hooks, *excludes, recipe.suite, str(root), *sources])
    say("root file system ready")


def installed_versions(dpkg_status: str, packages: Sequence[str]) -> dict[str, str]:
    """Package → installed version for the given packages, from the text of /var/lib/dpkg/status."""
    found: dict[str, str] = {}
    for stanza in dpkg_status.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[0] != " ")
        if fields.get("Package") in packages and "installed" in fields.get("Status", ""):
            found[fields["Package"]] = fields["Version"]
    return found


def _customize(recipe: Recipe, root: Path, work: Path, release: str) -> None:
    """Trim the root file system and install the init, sshd config, host key and authorized key."""
    for relative in recipe.trim_paths:
        target = root / relative
        if target.is_dir():
            for child in target.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
        elif target.exists():
            target.unlink()
    if recipe.init == "systemd":
        install_systemd(recipe, root)
    else:
        init = root / GUEST_INIT_PATH.lstrip("/")
        init.write_text(recipe.scripts["guest_init.sh"])
        init.chmod(0o755)
    for name, text in recipe.scripts.items():  # lines added to a file a package installed (variant.py)
        if name.startswith("append/"):
            with open(root / name.removeprefix("append/"), "a") as appended:
                appended.write(text)
    if recipe.kernel_config_in_root:
        (root / "boot").mkdir(exist_ok=True)
        shutil.copy2(work / f"config-{release}", root / "boot" / f"config-{release}")
    ssh_dir = root / "etc" / "ssh"
    (ssh_dir / "sshd_config").write_text(recipe.scripts["sshd_config"])
    _install_host_key(ssh_dir, recipe.hostname, work)
    dot_ssh = root / "root" / ".ssh"
    dot_ssh.mkdir(mode=0o700, exist_ok=True)
    authorized = dot_ssh / "authorized_keys"
    shutil.copy2(work / "id_ed25519.pub", authorized)
    authorized.chmod(0o600)
    _set_root_shell(root / "etc" / "passwd", recipe.root_shell)
    (root / "etc" / "hostname").write_text(recipe.hostname + "\n")
    (root / "etc" / "hosts").write_text(f"127.0.0.1 localhost\n127.0.1.1 {recipe.hostname}\n")
    (root / "etc" / "fstab").write_text(recipe.scripts["fstab"])
    (root / "usr" / "local" / "bin").mkdir(parents=True, exist_ok=True)


def _install_host_key(ssh_dir: Path, hostname: str, work: Path) -> None:
    """The guest's only host key, ed25519, made here (its public half pinned from `work`): private 0600, public 0644."""
    for old_key in ssh_dir.glob("ssh_host_*"):
        old_key.unlink()
    private = ssh_dir / "ssh_host_ed25519_key"
    run_tool(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"root@{hostname}", "-f", str(private)])
    private.chmod(0o600)
    private.with_suffix(".pub").chmod(0o644)
    shutil.copy2(private.with_suffix(".pub"), work / "ssh_host_ed25519_key.pub")


def make_root_disk(recipe: Recipe, tree: Path, disk: Path) -> None:
    """The ext4 root disk made from `tree` (mkfs.ext4 -d keeps each file's mode and owner). The disk file is 0600
    before anything is written into it: whoever can read it can read every file inside, the host private key too."""
    os.close(open_for_writing(disk))
    run_tool(["mkfs.ext4", "-q", "-F", *recipe.mkfs_options, "-L", "nodeconf-root", "-d", str(tree), str(disk),
              f"{recipe.root_disk_mib}M"])


def _set_root_shell(passwd: Path, shell: str) -> None:
    """Give root the recipe's login shell (sshd runs every remote command through it)."""
    lines = passwd.read_text().splitlines()
    for index, line in enumerate(lines):
        fields = line.split(":")
        if fields[0] == "root" and len(fields) == 7:
            lines[index] = ":".join([*fields[:6], shell])
    passwd.write_text("\n".join(lines) + "\n")


def _remove_tree(path: Path) -> None:
    """Remove a directory tree after unmounting anything left mounted beneath it (an interrupted chroot)."""
    resolved = str(path.resolve())
    with open("/proc/self/mounts") as mounts:
        points = [line.split()[1] for line in mounts]
    for point in sorted((p for p in points if p == resolved or p.startswith(resolved + "/")), reverse=True):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)
    shutil.rmtree(path, ignore_errors=True)


def prune_images(keep: str, cache_dir: Path | None = None) -> list[str]:
    """Remove cached images other than keep that no running VM uses; return the removed keys."""
    images = paths.images_dir(cache_dir)
    in_use = {Path(state.client_key).parent.name for state in list_states(cache_dir) if state.is_running()}
    removed = []
    for entry in sorted(images.iterdir()) if images.is_dir() else []:
        key = entry.name.removesuffix(".lock")
        if key in (keep, *in_use) or entry.name.startswith("."):
            continue
        if entry.is_dir() and not entry.is_symlink():  # a link is never followed out of the cache
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(key)
        elif entry.suffix == ".lock":
            entry.unlink(missing_ok=True)
    return removed


BUILD_DIR = re.compile(r"\.(?P<key>[A-Za-z0-9][A-Za-z0-9._-]*)\.build-\d+")


def remove_leftover_builds(cache_dir: Path | None = None, dry_run: bool = False) -> list[str]:
    """Remove the scratch directories (`.KEY.build-PID`) of image builds that were killed; return their names.

    A build holds `KEY.lock` while it runs, so a scratch directory whose lock can be taken has no builder left.
    """
    images = paths.images_dir(cache_dir)
    removed = []
    for entry in sorted(images.iterdir()) if images.is_dir() else []:
        match = BUILD_DIR.fullmatch(entry.name)
        if match is None or not entry.is_dir() or entry.is_symlink():
            continue
        with open(images / f"{match['key']}.lock", "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a build of this key is running now
            try:
                if not dry_run:
                    _remove_tree(entry)
                removed.append(entry.name)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
    return removed


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m infra.vm.image`: build the reference image (or a variant) if needed and print its directory."""
    parser = argparse.ArgumentParser(prog="python -m infra.vm.image", description=main.__doc__)
    parser.add_argument("--cache-dir", type=Path, default=None, help="default: $XDG_CACHE_HOME/nodeconf")
    parser.add_argument("--prune", action="store_true", help="then remove other cached images no VM uses")
    parser.add_argument("--debian", choices=RELEASES, default="bookworm", help="Debian release (kernel, userland)")
    parser.add_argument("--init", choices=INITS, default="minimal", help="PID 1: nodeconf's minimal init or systemd")
    parser.add_argument("--runtime", choices=RUNTIMES, default="direct", help="container runtime in the image")
    args = parser.parse_args(argv)
    variant = parse_variant({"debian": args.debian, "init": args.init, "runtime": args.runtime})
    try:
        image = ensure_image(args.cache_dir, progress=StepPrinter("image"), variant=variant)
        if args.prune:
            for key in prune_images(image.key, args.cache_dir):
                print(f"nodeconf: removed image {key}", file=sys.stderr)
    except InfrastructureError as err:  # ImageBuildError, or a cache file that cannot be locked
        print(f"nodeconf: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nodeconf: image build interrupted", file=sys.stderr)
        return 130
    print(image.directory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
