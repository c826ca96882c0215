"""What a vendor-like disk image is made of, its partition table and GRUB files, and its cache key (pure).

Source: issue 14 item 4; Debian cloud images (GPT, BIOS boot partition or ESP, ext4 root, GRUB, the distribution
kernel and initramfs, cloud-init); UEFI specification 2.10 §13.3.1.3 (removable media path EFI/BOOT/BOOTX64.EFI).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

# Bump when the build steps change in a way the recipe fields do not show, so cached images are rebuilt.
RECIPE_FORMAT = 1
SECTOR = 512
MIB_SECTORS = 2048
# GPT partition type GUIDs (UEFI specification §5.3.3; freedesktop Discoverable Partitions for root x86-64).
BIOS_BOOT_TYPE = "21686148-6449-6E6F-744E-656564454649"
ESP_TYPE = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B"
ROOT_X86_64_TYPE = "4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709"
SUITES = ("bookworm", "trixie", "sid")
# Before trixie, /usr is merged by mmdebstrap's hook rather than by base-files itself.
MERGED_USR_HOOK_SUITES = ("bookworm",)
ESP_LOADER = "EFI/BOOT/BOOTX64.EFI"


@dataclass(frozen=True)
class VendorRecipe:
    """A cloud-style Debian disk image: suite, firmware, packages and sizes."""

    suite: str = "trixie"
    uefi: bool = False
    packages: tuple[str, ...] = (
        "linux-image-amd64", "initramfs-tools", "systemd", "systemd-sysv", "udev", "dbus", "cloud-init",
        "netplan.io", "openssh-server", "python3", "procps", "iproute2", "e2fsprogs", "grub2-common",
    )
    sources: tuple[str, ...] = (
        "deb http://deb.debian.org/debian {suite} main",
        "deb http://deb.debian.org/debian {suite}-updates main",
        "deb http://deb.debian.org/debian-security {suite}-security main",
    )
    dpkg_path_excludes: tuple[str, ...] = (
        "usr/share/doc/*", "usr/share/man/*", "usr/share/info/*", "usr/share/locale/*", "usr/share/lintian/*",
    )
    first_partition_mib: int = 1
    esp_mib: int = 64
    root_mib: int = 3072
    kernel_args: tuple[str, ...] = ("ro", "console=tty0", "console=ttyS0,115200")

    def __post_init__(self) -> None:
        if self.suite not in SUITES:
            raise ValueError(f"unknown Debian suite {self.suite!r} (known: {', '.join(SUITES)})")

    @property
    def firmware(self) -> str:
        """'uefi' or 'bios'."""
        return "uefi" if self.uefi else "bios"

    @property
    def grub_package(self) -> str:
        """The GRUB platform package whose modules and boot images go on the disk."""
        return "grub-efi-amd64-bin" if self.uefi else "grub-pc-bin"

    @property
    def grub_platform(self) -> str:
        """GRUB's platform directory name under /usr/lib/grub."""
        return "x86_64-efi" if self.uefi else "i386-pc"

    @property
    def all_packages(self) -> tuple[str, ...]:
        """Every package named for mmdebstrap --include."""
        return (*self.packages, self.grub_package)

    def fingerprint(self) -> str:
        """A stable hash of every recipe field."""
        body = {**asdict(self), "format": RECIPE_FORMAT}
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def cache_key(recipe: VendorRecipe, versions: dict[str, str]) -> str:
    """suite-firmware-hash of the recipe and the exact package versions going into the image."""
    pinned = json.dumps(sorted(versions.items())).encode()
    digest = hashlib.sha256(recipe.fingerprint().encode() + b"\0" + pinned).hexdigest()
    return f"{recipe.suite}-{recipe.firmware}-{digest[:16]}"


@dataclass(frozen=True)
class Layout:
    """Where the two partitions lie on the disk, in 512-byte sectors (1 MiB aligned)."""

    first_start: int
    first_sectors: int
    root_start: int
    root_sectors: int
    total_sectors: int


def layout(recipe: VendorRecipe) -> Layout:
    """Partition 1 (BIOS boot or ESP) at 1 MiB, the root after it, 1 MiB left for the backup GPT."""
    first = (recipe.esp_mib if recipe.uefi else recipe.first_partition_mib) * MIB_SECTORS
    root_start = MIB_SECTORS + first
    root = recipe.root_mib * MIB_SECTORS
    return Layout(MIB_SECTORS, first, root_start, root, root_start + root + MIB_SECTORS)


def sfdisk_script(recipe: VendorRecipe, part: Layout) -> str:
    """The sfdisk input for the GPT: partition 1 BIOS boot (BIOS) or EFI system (UEFI), partition 2 root."""
    first_type, first_name = (ESP_TYPE, "esp") if recipe.uefi else (BIOS_BOOT_TYPE, "bios-boot")
    return (
        "label: gpt\n"
        f'start={part.first_start}, size={part.first_sectors}, type={first_type}, name="{first_name}"\n'
        f'start={part.root_start}, size={part.root_sectors}, type={ROOT_X86_64_TYPE}, name="root"\n'
    )


def early_config(root_uuid: str) -> str:
    """The config embedded in GRUB's core image: find the root file system by UUID, load /boot/grub from it."""
    return f"search --no-floppy --fs-uuid --set=root {root_uuid}\nset prefix=($root)/boot/grub\n"


def core_modules(recipe: VendorRecipe) -> tuple[str, ...]:
    """Modules built into the core image: enough to read the GPT and ext4 and run the early config."""
    disk = () if recipe.uefi else ("biosdisk",)
    return (*disk, "part_gpt", "ext2", "search", "search_fs_uuid", "configfile", "normal")


def grub_config(recipe: VendorRecipe, root_uuid: str, kernel_release: str) -> str:
    """/boot/grub/grub.cfg: serial and local console, one entry booting the distribution kernel and initramfs."""
    args = " ".join((f"root=UUID={root_uuid}", *recipe.kernel_args))
    return (
        "serial --unit=0 --speed=115200\n"
        "terminal_input serial console\n"
        "terminal_output serial console\n"
        "set default=0\nset timeout=0\n"
        f"search --no-floppy --fs-uuid --set=root {root_uuid}\n"
        f"menuentry 'Debian GNU/Linux {recipe.suite}, Linux {kernel_release}' {{\n"
        "  insmod part_gpt\n  insmod ext2\n"
        f"  echo 'Loading Linux {kernel_release} ...'\n"
        f"  linux /boot/vmlinuz-{kernel_release} {args}\n"
        f"  initrd /boot/initrd.img-{kernel_release}\n"
        "}\n"
    )


def fstab(root_uuid: str, esp_volume_id: str | None) -> str:
    """/etc/fstab: the root by UUID; the ESP on /boot/efi for UEFI images."""
    lines = [f"UUID={root_uuid} / ext4 defaults,errors=remount-ro 0 1"]
    if esp_volume_id:
        lines.append(f"UUID={esp_volume_id} /boot/efi vfat umask=0077 0 1")
    return "\n".join(lines) + "\n"
