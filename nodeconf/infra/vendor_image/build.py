"""Build a vendor-like Debian disk image the way cloud images are built, without loop devices; cache it by key.

mmdebstrap installs the distribution kernel (its initramfs made inside the root by initramfs-tools), systemd,
cloud-init and sshd; mkfs.ext4 -d makes the root file system from the tree, mkfs.vfat + mtools the ESP;
sfdisk writes the GPT into a raw file and the partitions are copied in at their offsets; GRUB's images come from
the image's own GRUB package (grub-mkimage run inside the root); qemu-img converts to qcow2.
Source: issue 14 item 4; mmdebstrap(1); mke2fs(8) -d; sfdisk(8); grub-mkimage(1); qemu-img(1).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from infra.vendor_image.archive import VendorImageError, resolve_versions, run
from infra.vendor_image.bootloader import install_bios_grub
from infra.vendor_image.recipe import (
    ESP_LOADER,
    MERGED_USR_HOOK_SUITES,
    SECTOR,
    Layout,
    VendorRecipe,
    cache_key,
    core_modules,
    early_config,
    fstab,
    grub_config,
    layout,
    sfdisk_script,
)
from infra.vm import paths
from infra.vm.cache_files import locked

Progress = Callable[[str], None]
MANIFEST = "manifest.json"
DISK = "disk.qcow2"
BUILD_TOOLS = ("mmdebstrap", "apt-get", "apt-cache", "mkfs.ext4", "mkfs.vfat", "mmd", "mcopy", "sfdisk", "dd",
               "qemu-img", "chroot")
TRIM_PATHS = ("var/lib/apt/lists", "var/cache/apt", "var/log")


@dataclass(frozen=True)
class VendorImage:
    """A built vendor-like image in the cache: its qcow2 disk and what went into it."""

    directory: Path
    key: str
    firmware: str
    kernel_release: str

    @property
    def disk(self) -> Path:
        return self.directory / DISK


def vendor_images_dir(cache_dir: Path | None = None) -> Path:
    """Where vendor-like images are cached (apart from the reference images, which prune their own directory)."""
    return paths.cache_root(cache_dir) / "vendor-images"


def check_host() -> None:
    """One line naming the missing host tools, or that root is needed."""
    missing = [tool for tool in BUILD_TOOLS if shutil.which(tool) is None]
    if missing:
        raise VendorImageError(f"missing host tools: {' '.join(missing)}; run: bash infra/install-host.sh")
    if os.geteuid() != 0:
        raise VendorImageError("building a vendor image needs root (mmdebstrap --mode=root, chroot, file ownership)")


def ensure_vendor_image(recipe: VendorRecipe, cache_dir: Path | None = None,
                        progress: Progress | None = None) -> VendorImage:
    """The cached image for this recipe and the suite's current package versions, built once (locked)."""
    say = progress or (lambda _message: None)
    check_host()
    images = vendor_images_dir(cache_dir)
    images.mkdir(parents=True, exist_ok=True)
    with locked(images / f"apt-{recipe.suite}.lock"):
        versions = resolve_versions(recipe, images / f"apt-{recipe.suite}")
    key = cache_key(recipe, versions)
    target = images / key
    if not (target / MANIFEST).is_file():
        with locked(images / f"{key}.lock"):
            if not (target / MANIFEST).is_file():
                _build(recipe, versions, key, target, say)
    else:
        say(f"vendor image {key} cached in {target}")
    manifest = json.loads((target / MANIFEST).read_text())
    return VendorImage(target, key, manifest["firmware"], manifest["kernel_release"])


def _build(recipe: VendorRecipe, versions: dict[str, str], key: str, target: Path, say: Progress) -> None:
    """Build into a scratch directory and move it into place; the scratch is removed on failure."""
    started = time.monotonic()
    work = target.parent / f".{key}.build-{os.getpid()}"
    _remove_tree(work)
    work.mkdir()
    try:
        root = work / "root"
        _bootstrap(recipe, versions, root, say)
        root_uuid = str(uuid.uuid4())
        esp_id = secrets.token_hex(4).upper() if recipe.uefi else None
        release = _customize(recipe, root, root_uuid, esp_id, work)
        part = layout(recipe)
        say(f"root file system ({recipe.root_mib} MiB ext4) from the tree")
        run(["mkfs.ext4", "-q", "-F", "-U", root_uuid, "-L", "root", "-d", str(root), str(work / "root.img"),
             f"{recipe.root_mib}M"])
        _remove_tree(root)
        raw = work / "disk.raw"
        say(f"GPT disk ({part.total_sectors * SECTOR // 2**20} MiB, {recipe.firmware})")
        with open(raw, "wb") as handle:
            handle.truncate(part.total_sectors * SECTOR)
        _sfdisk(raw, recipe, part)
        _copy_in(work / "root.img", raw, part.root_start)
        if recipe.uefi:
            assert esp_id is not None
            _make_esp(work / "esp.img", esp_id, recipe.esp_mib, work / "BOOTX64.EFI")
            _copy_in(work / "esp.img", raw, part.first_start)
        else:
            install_bios_grub(raw, (work / "boot.img").read_bytes(), (work / "core.img").read_bytes(),
                              part.first_start, part.first_sectors)
        say("qemu-img convert to qcow2")
        run(["qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(raw), str(work / DISK)])
        for scratch in ("root.img", "esp.img", "disk.raw", "boot.img", "core.img", "BOOTX64.EFI"):
            (work / scratch).unlink(missing_ok=True)
        manifest = {"key": key, "suite": recipe.suite, "firmware": recipe.firmware, "kernel_release": release,
                    "root_uuid": root_uuid, "versions": versions,
                    "build_seconds": round(time.monotonic() - started, 1)}
        (work / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        work.rename(target)
        say(f"vendor image {key} built in {manifest['build_seconds']} s: {target / DISK}")
    finally:
        _remove_tree(work)


def _bootstrap(recipe: VendorRecipe, versions: dict[str, str], root: Path, say: Progress) -> None:
    """mmdebstrap the packages at the resolved versions; the kernel's postinst makes the initramfs inside."""
    pinned = [f"{name}={versions[name]}" for name in recipe.all_packages]
    say(f"mmdebstrap {recipe.suite} ({', '.join(recipe.all_packages)})")
    hooks = (["--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr"]
             if recipe.suite in MERGED_USR_HOOK_SUITES else [])
    excludes = [f"--dpkgopt=path-exclude=/{pattern}" for pattern in recipe.dpkg_path_excludes]
    sources = [line.format(suite=recipe.suite) for line in recipe.sources]
    run(["mmdebstrap", "--mode=root", "--variant=minbase", f"--include={','.join(pinned)}", *hooks, *excludes,
         recipe.suite, str(root), *sources])
    say("root tree ready")


def _customize(recipe: VendorRecipe, root: Path, root_uuid: str, esp_id: str | None, work: Path) -> str:
    """Cloud-image first-boot state, fstab, GRUB files and images; return the kernel release."""
    kernels = sorted(p.name.removeprefix("vmlinuz-") for p in (root / "boot").glob("vmlinuz-*"))
    if len(kernels) != 1 or not (root / "boot" / f"initrd.img-{kernels[0]}").is_file():
        raise VendorImageError(f"expected one kernel and its initramfs in /boot, found {kernels or 'none'}")
    release = kernels[0]
    for relative in TRIM_PATHS:
        for child in (root / relative).glob("*"):
            if child.is_dir() and not child.is_symlink():
                _remove_tree(child)
            else:
                child.unlink()
    for host_key in (root / "etc" / "ssh").glob("ssh_host_*"):
        host_key.unlink()  # cloud-init installs the host key of each instance
    (root / "etc" / "machine-id").write_text("uninitialized\n")
    (root / "etc" / "hostname").write_text("debian\n")
    (root / "etc" / "fstab").write_text(fstab(root_uuid, f"{esp_id[:4]}-{esp_id[4:]}" if esp_id else None))
    grub_dir = root / "boot" / "grub"
    grub_dir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(root / "usr" / "lib" / "grub" / recipe.grub_platform, grub_dir / recipe.grub_platform,
                    dirs_exist_ok=True)
    (grub_dir / "grub.cfg").write_text(grub_config(recipe, root_uuid, release))
    (root / "tmp" / "early.cfg").write_text(early_config(root_uuid))
    output = "/tmp/BOOTX64.EFI" if recipe.uefi else "/tmp/core.img"
    run(["chroot", str(root), "grub-mkimage", "-O", recipe.grub_platform, "-d",
         f"/usr/lib/grub/{recipe.grub_platform}", "-o", output, "-c", "/tmp/early.cfg", "-p", "/boot/grub",
         *core_modules(recipe)])
    shutil.move(root / output.lstrip("/"), work / Path(output).name)
    (root / "tmp" / "early.cfg").unlink()
    if not recipe.uefi:
        shutil.copyfile(root / "usr" / "lib" / "grub" / "i386-pc" / "boot.img", work / "boot.img")
    return release


def _sfdisk(raw: Path, recipe: VendorRecipe, part: Layout) -> None:
    """Write the GPT into the raw disk file (sfdisk works on a regular file)."""
    proc = subprocess.run(["sfdisk", "-q", "--no-reread", "--no-tell-kernel", str(raw)],
                          input=sfdisk_script(recipe, part).encode(), capture_output=True, check=False)
    if proc.returncode != 0:
        raise VendorImageError(f"sfdisk failed: {proc.stderr.decode(errors='replace').strip()}")


def _copy_in(partition: Path, raw: Path, start_sector: int) -> None:
    """Copy a partition image into the raw disk at its start, keeping holes (dd conv=sparse)."""
    run(["dd", f"if={partition}", f"of={raw}", "bs=1M", f"seek={start_sector * SECTOR}", "oflag=seek_bytes",
         "conv=notrunc,sparse", "status=none"])


def _make_esp(esp: Path, volume_id: str, size_mib: int, loader: Path) -> None:
    """A FAT32 EFI system partition with GRUB at the removable-media path EFI/BOOT/BOOTX64.EFI."""
    run(["mkfs.vfat", "-F", "32", "-n", "ESP", "-i", volume_id, "-C", str(esp), str(size_mib * 1024)])
    run(["mmd", "-i", str(esp), "::/EFI", "::/EFI/BOOT"])
    run(["mcopy", "-i", str(esp), str(loader), f"::/{ESP_LOADER}"])


def _remove_tree(path: Path) -> None:
    """Remove a build tree after unmounting anything an interrupted chroot left mounted beneath it."""
    if not path.exists():
        return
    resolved = str(path.resolve())
    with open("/proc/self/mounts") as mounts:
        points = [line.split()[1] for line in mounts]
    for point in sorted((p for p in points if p == resolved or p.startswith(resolved + "/")), reverse=True):
        run(["umount", "-l", point])
    shutil.rmtree(path, ignore_errors=True)
