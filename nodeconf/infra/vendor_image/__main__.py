"""`python -m infra.vendor_image OUT.qcow2 [--debian SUITE] [--uefi]`: a vendor-like Debian disk image."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from infra.vendor_image.archive import VendorImageError, run
from infra.vendor_image.build import ensure_vendor_image
from infra.vendor_image.recipe import SUITES, VendorRecipe
from infra.vm.progress import StepPrinter
from nodeconf.errors import InfrastructureError


def main(argv: Sequence[str] | None = None) -> int:
    """Build (or take from the cache) a cloud-style Debian image and write it to OUT (.qcow2, else raw)."""
    parser = argparse.ArgumentParser(prog="python -m infra.vendor_image", description=main.__doc__)
    parser.add_argument("out", type=Path, help="the image file to write: OUT.qcow2, or OUT.raw/OUT.img for raw")
    parser.add_argument("--debian", default="trixie", choices=SUITES, help="Debian suite (default: trixie)")
    parser.add_argument("--uefi", action="store_true", help="an EFI system partition and GRUB for UEFI "
                        "(default: a BIOS boot partition and GRUB for BIOS)")
    parser.add_argument("--cache-dir", type=Path, default=None, help="default: $XDG_CACHE_HOME/nodeconf")
    args = parser.parse_args(argv)
    if not args.out.parent.is_dir():
        print(f"nodeconf: {args.out.parent} is not a directory", file=sys.stderr)
        return 2
    try:
        image = ensure_vendor_image(VendorRecipe(suite=args.debian, uefi=args.uefi), args.cache_dir,
                                    StepPrinter("vendor-image"))
        scratch = args.out.with_name(f".{args.out.name}.partial")
        if args.out.suffix == ".qcow2":
            shutil.copyfile(image.disk, scratch)
        else:
            run(["qemu-img", "convert", "-f", "qcow2", "-O", "raw", str(image.disk), str(scratch)])
        scratch.replace(args.out)
    except (VendorImageError, InfrastructureError) as err:  # a build failure, or a cache file that cannot be locked
        print(f"nodeconf: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nodeconf: vendor image build interrupted", file=sys.stderr)
        return 130
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
