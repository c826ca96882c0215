"""The NoCloud seed of a vendor image boot: an ISO 9660 volume `cidata` with meta-data and user-data.

The user-data installs nodeconf's client key for root, turns password login off, installs a host key made here
(so it is pinned before the guest boots) and turns on the swap disk nodeconf attaches. The seed holds that host's
private key: the ISO file and the files in it (Rock Ridge keeps their mode, which the guest's mount shows) are 0600.
Source: cloud-init docs, "NoCloud" datasource (volume label cidata, files meta-data and user-data) and the
modules "SSH" (ssh_keys, ssh_deletekeys, ssh_genkeytypes, disable_root, ssh_authorized_keys), "Set Passwords"
(ssh_pwauth), "Bootcmd".
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from infra.vm.cache_files import open_for_writing

SEED_VOLUME_ID = "cidata"
SWAP_LABEL = "nodeconf-swap"


@dataclass(frozen=True)
class SeedKeys:
    """The client's public key (root may log in with it) and the guest's ed25519 host key pair."""

    authorized_key: str
    host_private_key: str
    host_public_key: str


def make_keys(directory: Path) -> SeedKeys:
    """A fresh client key (id_ed25519) and guest host key (host_ed25519) in directory (ssh-keygen)."""
    for name, comment in (("id_ed25519", "nodeconf-client"), ("host_ed25519", "nodeconf-vendor-host")):
        proc = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment,
                               "-f", str(directory / name)], capture_output=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"ssh-keygen failed: {proc.stderr.decode(errors='replace').strip()}")
    return SeedKeys(
        authorized_key=(directory / "id_ed25519.pub").read_text().strip(),
        host_private_key=(directory / "host_ed25519").read_text(),
        host_public_key=(directory / "host_ed25519.pub").read_text().strip(),
    )


def user_data(keys: SeedKeys, *, swap: bool) -> str:
    """The #cloud-config: root's key, no passwords, our host key only, the swap disk on at boot."""
    config: dict[str, object] = {
        "disable_root": False,
        "users": [],
        "ssh_authorized_keys": [keys.authorized_key],
        "ssh_pwauth": False,
        "ssh_deletekeys": True,
        # Only ed25519, whose key is given above (the schema wants a non-empty list; an existing key is kept).
        "ssh_genkeytypes": ["ed25519"],
        "ssh_keys": {"ed25519_private": keys.host_private_key, "ed25519_public": keys.host_public_key},
    }
    if swap:
        config["bootcmd"] = [["swapon", "-L", SWAP_LABEL]]
    # JSON is YAML: no YAML writer needed, and the private key's newlines survive as escapes.
    return "#cloud-config\n" + json.dumps(config, indent=2) + "\n"


def meta_data(instance_id: str, hostname: str) -> str:
    """The NoCloud meta-data: a new instance id per boot makes cloud-init run its per-instance modules."""
    return json.dumps({"instance-id": instance_id, "local-hostname": hostname}) + "\n"


def write_seed_iso(output: Path, files: dict[str, str]) -> None:
    """An ISO 9660 (Rock Ridge, Joliet) volume labelled cidata holding files (xorriso), readable by its owner only."""
    staging = output.with_suffix(".d")
    staging.mkdir(mode=0o700)
    for name, text in files.items():
        with os.fdopen(open_for_writing(staging / name), "w") as handle:
            handle.write(text)
    os.close(open_for_writing(output))  # made 0600 before xorriso writes into it
    proc = subprocess.run(["xorriso", "-as", "mkisofs", "-quiet", "-output", str(output), "-volid",
                           SEED_VOLUME_ID, "-joliet", "-rock", str(staging)], capture_output=True, check=False)
    for name in files:
        (staging / name).unlink()
    staging.rmdir()
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines()
        raise RuntimeError(f"xorriso failed: {lines[-1] if lines else proc.returncode}")
