"""Build and cache the reference VM image from Debian packages (source: issue 4, MEASURED.md build facts)."""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from infra.vm import paths
from infra.vm.kernel import extract_vmlinux
from infra.vm.progress import StepPrinter
from infra.vm.qemu import kernel_cmdline
from infra.vm.recipe import (
    GUEST_INIT_PATH,
    READY_MARKER,
    Recipe,
    cache_key,
    candidate_versions,
    default_recipe,
    insmod_order,
    kernel_package_from_depends,
    kernel_release,
)
from infra.vm.state import list_states
from nodeconf.errors import InfrastructureError

Progress = Callable[[str], None]
MANIFEST = "manifest.json"
APT_LISTS = Path("/var/lib/apt/lists")
BUILD_TOOLS = ("apt-get", "apt-cache", "dpkg-deb", "mmdebstrap", "depmod", "modprobe", "cpio", "mkfs.ext4",
               "ssh-keygen")
INITRAMFS_APPLETS = ("sh", "mount", "umount", "insmod", "switch_root", "sleep", "cat", "mkdir")


class ImageBuildError(InfrastructureError):
    """The image could not be built; the message is one line saying why and what to do."""


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

    @classmethod
    def load(cls, directory: Path) -> VmImage:
        """The image described by the manifest in a finished image directory."""
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
        )


def _run(argv: Sequence[str], *, cwd: Path | None = None, input: bytes | None = None) -> str:
    """Run a host command; on failure raise ImageBuildError with its last stderr line."""
    proc = subprocess.run(list(argv), cwd=cwd, input=input, capture_output=True, check=False)
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).decode(errors="replace").strip().splitlines()
        tail = lines[-1] if lines else f"exit status {proc.returncode}"
        raise ImageBuildError(f"{argv[0]} failed: {tail}")
    return proc.stdout.decode(errors="replace")


def check_host() -> None:
    """Fail with one line naming the missing tools (or root) needed to build the image."""
    missing = [tool for tool in BUILD_TOOLS if shutil.which(tool) is None]
    if missing:
        raise ImageBuildError(f"missing host tools: {' '.join(missing)}; run: bash infra/install-host.sh")
    if os.geteuid() != 0:
        raise ImageBuildError("building the reference image needs root (mmdebstrap --mode=root, file ownership)")


def resolve_versions(recipe: Recipe) -> dict[str, str]:
    """The exact package versions the image would contain, from the host's apt cache (one key input)."""
    try:
        depends = _run(["apt-cache", "depends", recipe.kernel_metapackage])
        kernel_package = kernel_package_from_depends(depends)
    except (ImageBuildError, ValueError) as err:
        raise ImageBuildError(f"cannot resolve the kernel package ({err}); run: apt-get update") from err
    packages = [kernel_package, recipe.busybox_package, *recipe.include]
    versions = candidate_versions(_run(["apt-cache", "policy", *packages]))
    unknown = [p for p in packages if versions.get(p, "(none)") == "(none)"]
    if unknown:
        raise ImageBuildError(f"apt has no candidate for {' '.join(unknown)}; run: apt-get update")
    versions["kernel-package"] = kernel_package
    return versions


def apt_lists_signature(lists_dir: Path | None = None) -> str:
    """A hash of the apt package lists' names, sizes and times: it changes exactly when apt-get update does."""
    lists_dir = lists_dir or APT_LISTS
    try:
        entries = sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in lists_dir.iterdir() if e.is_file())
    except OSError:
        entries = []
    return hashlib.sha256(json.dumps(entries).encode()).hexdigest()


def cached_versions(recipe: Recipe, images: Path) -> dict[str, str]:
    """resolve_versions(), remembered in the cache until the apt lists change (apt-cache takes ≈1 s a call)."""
    memo = images / "resolved-versions.json"
    signature = hashlib.sha256((recipe.fingerprint() + apt_lists_signature()).encode()).hexdigest()
    with contextlib.suppress(OSError, ValueError):
        remembered = json.loads(memo.read_text())
        if remembered.get("signature") == signature:
            return dict(remembered["versions"])
    versions = resolve_versions(recipe)
    with contextlib.suppress(OSError):
        images.mkdir(parents=True, exist_ok=True)
        scratch = memo.with_name(f"{memo.name}.{os.getpid()}")
        scratch.write_text(json.dumps({"signature": signature, "versions": versions}))
        scratch.replace(memo)
    return versions


def ensure_image(cache_dir: Path | None = None, progress: Progress | None = None,
                 recipe: Recipe | None = None) -> VmImage:
    """The cached image for this recipe and these package versions, built once (locked across processes)."""
    say = progress or (lambda _message: None)
    recipe = recipe or default_recipe()
    images = paths.images_dir(cache_dir)
    versions = cached_versions(recipe, images)
    key = cache_key(recipe, versions)
    target = images / key
    if (target / MANIFEST).is_file():
        say(f"image {key} cached in {target}")
        return VmImage.load(target)
    images.mkdir(parents=True, exist_ok=True)
    with _locked(images / f"{key}.lock"):
        if not (target / MANIFEST).is_file():
            check_host()
            _build(recipe, versions, key, target, say)
    return VmImage.load(target)


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive file lock so concurrent sessions build an image only once."""
    with open(lock_path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build(recipe: Recipe, versions: dict[str, str], key: str, target: Path, say: Progress) -> None:
    """Build the image into a scratch directory and move it into place; the scratch is removed on failure."""
    started = time.monotonic()
    work = target.parent / f".{key}.build-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        say(f"building image {key} (root file system and kernel in parallel)")
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "nodeconf-client", "-f",
              str(work / "id_ed25519")])
        with ThreadPoolExecutor(max_workers=2) as pool:
            rootfs = pool.submit(_bootstrap_rootfs, recipe, work / "rootfs", say)
            boot = pool.submit(_build_boot, recipe, versions, work, say)
            release = boot.result()
            rootfs.result()
        _customize(recipe, work / "rootfs", work)
        installed = installed_versions((work / "rootfs" / "var/lib/dpkg/status").read_text(), recipe.include)
        say(f"making root disk ({recipe.root_disk_mib} MiB ext4)")
        _run(["mkfs.ext4", "-q", "-F", *recipe.mkfs_options, "-L", "nodeconf-root", "-d",
              str(work / "rootfs"), str(work / "root.img"), f"{recipe.root_disk_mib}M"])
        _remove_tree(work / "rootfs")
        manifest = {"key": key, "kernel_release": release, "versions": versions, "installed": installed,
                    "build_seconds": round(time.monotonic() - started, 1)}
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
    sources = [line.format(suite=recipe.suite) for line in recipe.sources]
    _run(["mmdebstrap", "--mode=root", "--variant=minbase", f"--include={','.join(recipe.include)}",
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


def _build_boot(recipe: Recipe, versions: dict[str, str], work: Path, say: Progress) -> str:
    """Download and unpack the kernel and busybox, write vmlinux and the initramfs; return the release."""
    kernel_package = versions["kernel-package"]
    release = kernel_release(kernel_package)
    debs = work / "debs"
    debs.mkdir()
    say(f"downloading {kernel_package} and {recipe.busybox_package}")
    _run(["apt-get", "download", "-q", "-o", "APT::Sandbox::User=root",
          f"{kernel_package}={versions[kernel_package]}",
          f"{recipe.busybox_package}={versions[recipe.busybox_package]}"], cwd=debs)
    kernel_tree, busybox_tree = work / "kernel-tree", work / "busybox-tree"
    for deb in debs.glob("*.deb"):
        tree = kernel_tree if deb.name.startswith("linux-image-") else busybox_tree
        _run(["dpkg-deb", "-x", str(deb), str(tree)])
    say(f"extracting vmlinux from vmlinuz-{release}")
    vmlinuz = (kernel_tree / "boot" / f"vmlinuz-{release}").read_bytes()
    (work / "vmlinux").write_bytes(extract_vmlinux(vmlinuz))
    _run(["depmod", "-b", str(kernel_tree), release])
    modules = insmod_order(
        _run(["modprobe", "-d", str(kernel_tree), "-S", release, "--show-depends", module])
        for module in recipe.boot_modules
    )
    say(f"initramfs with busybox and {len(modules)} modules")
    _write_initramfs(recipe, kernel_tree, busybox_tree, [Path(m) for m in modules], work / "initrd.img")
    shutil.rmtree(debs)
    shutil.rmtree(kernel_tree)
    shutil.rmtree(busybox_tree)
    return release


def _write_initramfs(recipe: Recipe, kernel_tree: Path, busybox_tree: Path, modules: list[Path],
                     output: Path) -> None:
    """An uncompressed newc initramfs: busybox, the boot modules in load order, and the init script."""
    stage = output.parent / "initramfs"
    for directory in ("bin", "dev", "proc", "sys", "newroot"):
        (stage / directory).mkdir(parents=True, exist_ok=True)
    shutil.copy2(busybox_tree / "bin" / "busybox", stage / "bin" / "busybox")
    for applet in INITRAMFS_APPLETS:
        (stage / "bin" / applet).symlink_to("busybox")
    with contextlib.suppress(PermissionError):
        os.mknod(stage / "dev" / "console", 0o600 | 0o020000, os.makedev(5, 1))
    order = []
    for module in modules:
        inside = Path("/") / module.relative_to(kernel_tree)
        data = module.read_bytes()
        if inside.suffix == ".xz":
            data, inside = lzma.decompress(data), inside.with_suffix("")
        (stage / inside.relative_to("/")).parent.mkdir(parents=True, exist_ok=True)
        (stage / inside.relative_to("/")).write_bytes(data)
        order.append(str(inside))
    (stage / "modules.order").write_text("\n".join(order) + "\n")
    init = stage / "init"
    init.write_text(recipe.scripts["initramfs_init.sh"])
    init.chmod(0o755)
    members = sorted(str(p.relative_to(stage)) for p in stage.rglob("*"))
    listing = ("\n".join([".", *members]) + "\n").encode()
    with open(output, "wb") as archive:
        subprocess.run(["cpio", "--quiet", "-o", "-H", "newc", "-R", "0:0"], input=listing, stdout=archive,
                       cwd=stage, check=True)
    shutil.rmtree(stage)


def _customize(recipe: Recipe, root: Path, work: Path) -> None:
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
    init = root / GUEST_INIT_PATH.lstrip("/")
    init.write_text(recipe.scripts["guest_init.sh"])
    init.chmod(0o755)
    ssh_dir = root / "etc" / "ssh"
    (ssh_dir / "sshd_config").write_text(recipe.scripts["sshd_config"])
    for old_key in ssh_dir.glob("ssh_host_*"):
        old_key.unlink()
    _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"root@{recipe.hostname}", "-f",
          str(ssh_dir / "ssh_host_ed25519_key")])
    shutil.copy2(ssh_dir / "ssh_host_ed25519_key.pub", work / "ssh_host_ed25519_key.pub")
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
        if entry.is_dir():
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
    """`python -m infra.vm.image`: build the reference image if needed and print its directory."""
    parser = argparse.ArgumentParser(prog="python -m infra.vm.image", description=main.__doc__)
    parser.add_argument("--cache-dir", type=Path, default=None, help="default: $XDG_CACHE_HOME/nodeconf")
    parser.add_argument("--prune", action="store_true", help="then remove other cached images no VM uses")
    args = parser.parse_args(argv)
    try:
        image = ensure_image(args.cache_dir, progress=StepPrinter("image"))
        if args.prune:
            for key in prune_images(image.key, args.cache_dir):
                print(f"nodeconf: removed image {key}", file=sys.stderr)
    except ImageBuildError as err:
        print(f"nodeconf: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nodeconf: image build interrupted", file=sys.stderr)
        return 130
    print(image.directory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
