"""The boot files of an image: vmlinux from the release's kernel packages and a busybox initramfs with its modules.

Source: MEASURED.md build facts (kernel .deb, depmod + modprobe --show-depends, busybox-static initramfs).
"""

from __future__ import annotations

import contextlib
import lzma
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from infra.vm.apt import Apt
from infra.vm.hostrun import ImageBuildError, run_tool
from infra.vm.kernel import extract_vmlinux, zstd_decompress
from infra.vm.recipe import Recipe, kernel_release, select_boot_modules

INITRAMFS_APPLETS = ("sh", "mount", "umount", "insmod", "switch_root", "sleep", "cat", "mkdir")


def build_boot(recipe: Recipe, apt: Apt, versions: dict[str, str], work: Path, say: Callable[[str], None]) -> str:
    """Download and unpack the kernel and busybox, write vmlinux and the initramfs; return the release."""
    kernel_package = versions["kernel-package"]
    release = kernel_release(kernel_package)
    kernel_debs = [p for p in versions if p.startswith("linux-") and p.endswith(f"-{release}")]
    debs = work / "debs"
    debs.mkdir()
    say(f"downloading {' '.join(kernel_debs)} and {recipe.busybox_package}")
    wanted = [f"{package}={versions[package]}" for package in [*kernel_debs, recipe.busybox_package]]
    run_tool(apt.argv("apt-get", "download", "-q", "-o", "APT::Sandbox::User=root", *wanted), cwd=debs)
    kernel_tree, busybox_tree = work / "kernel-tree", work / "busybox-tree"
    for deb in debs.glob("*.deb"):
        tree = kernel_tree if deb.name.startswith("linux-") else busybox_tree
        run_tool(["dpkg-deb", "-x", str(deb), str(tree)])
    # Newer packages ship /usr/lib/modules only (merged /usr); depmod and modprobe -d look below lib/modules.
    if not (kernel_tree / "lib").exists():
        (kernel_tree / "lib").symlink_to("usr/lib")
    vmlinuz = kernel_file(kernel_tree, release, "vmlinuz")
    say(f"extracting vmlinux from {vmlinuz.relative_to(kernel_tree)}")
    try:
        (work / "vmlinux").write_bytes(extract_vmlinux(vmlinuz.read_bytes()))
    except ValueError as err:
        raise ImageBuildError(f"{vmlinuz.name} of {kernel_package}: {err}") from err
    if recipe.kernel_config_in_root:
        shutil.copy2(kernel_file(kernel_tree, release, "config"), work / f"config-{release}")
    run_tool(["depmod", "-b", str(kernel_tree), release])
    try:
        modules = select_boot_modules({module: show_depends(kernel_tree, release, module)
                                       for module in recipe.boot_modules}, recipe.optional_boot_modules)
    except ValueError as err:
        raise ImageBuildError(f"{kernel_package}: {err}") from err
    say(f"initramfs with busybox and {len(modules)} modules")
    write_initramfs(recipe, kernel_tree, busybox_tree, [Path(m) for m in modules], work / "initrd.img")
    shutil.rmtree(debs)
    shutil.rmtree(kernel_tree)
    shutil.rmtree(busybox_tree)
    return release


def busybox_binary(busybox_tree: Path) -> Path:
    """bin/busybox (bookworm) or usr/bin/busybox (trixie on: packages ship merged-/usr paths)."""
    for candidate in (busybox_tree / "bin" / "busybox", busybox_tree / "usr" / "bin" / "busybox"):
        if candidate.is_file() and not candidate.is_symlink():
            return candidate
    raise ImageBuildError("no busybox binary in the busybox-static package")


def kernel_file(kernel_tree: Path, release: str, name: str) -> Path:
    """boot/NAME-RELEASE (Debian up to trixie) or usr/lib/modules/RELEASE/NAME (sid's split packages)."""
    for candidate in (kernel_tree / "boot" / f"{name}-{release}", kernel_tree / "lib/modules" / release / name):
        if candidate.is_file():
            return candidate
    raise ImageBuildError(f"no {name} for kernel {release} in its packages")


def show_depends(kernel_tree: Path, release: str, module: str) -> str | None:
    """`modprobe --show-depends` of a module (insmod lines, or `builtin NAME`); None when the kernel lacks it."""
    proc = subprocess.run(["modprobe", "-d", str(kernel_tree), "-S", release, "--show-depends", module],
                          capture_output=True, check=False)
    if proc.returncode != 0:
        if b"not found" in proc.stderr:
            return None
        raise ImageBuildError(f"modprobe failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode(errors="replace")


def write_initramfs(recipe: Recipe, kernel_tree: Path, busybox_tree: Path, modules: list[Path],
                     output: Path) -> None:
    """An uncompressed newc initramfs: busybox, the boot modules in load order, and the init script."""
    stage = output.parent / "initramfs"
    for directory in ("bin", "dev", "proc", "sys", "newroot"):
        (stage / directory).mkdir(parents=True, exist_ok=True)
    shutil.copy2(busybox_binary(busybox_tree), stage / "bin" / "busybox")
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
        elif inside.suffix == ".zst":
            data, inside = zstd_decompress(data), inside.with_suffix("")
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
