"""The NoCloud seed ISO: volume cidata, meta-data and user-data installing our keys, no passwords, swap on.

Source: cloud-init docs, "NoCloud" datasource and the SSH, Set Passwords and Bootcmd modules.
"""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import yaml

from nodeconf.infra.vm.nocloud import SWAP_LABEL, make_keys, meta_data, user_data, write_seed_iso


def iso_file(iso: Path, name: str, tmp_path: Path) -> str:
    out = tmp_path / f"out-{name}"
    subprocess.run(["xorriso", "-osirrox", "on", "-indev", str(iso), "-extract", f"/{name}", str(out)],
                   check=True, capture_output=True)
    return out.read_text()


def test_seed_iso_holds_cloud_config_with_our_keys(tmp_path: Path) -> None:
    keys = make_keys(tmp_path)
    iso = tmp_path / "seed.iso"
    write_seed_iso(iso, {"meta-data": meta_data("nodeconf-1", "vm-a"), "user-data": user_data(keys, swap=True)})
    listing = subprocess.run(["xorriso", "-indev", str(iso), "-pvd_info"], capture_output=True, text=True,
                             check=True).stdout
    assert "Volume Id    : cidata" in listing
    assert yaml.safe_load(iso_file(iso, "meta-data", tmp_path)) == {"instance-id": "nodeconf-1",
                                                                     "local-hostname": "vm-a"}
    text = iso_file(iso, "user-data", tmp_path)
    assert text.startswith("#cloud-config\n")
    config = yaml.safe_load(text)
    assert config["ssh_authorized_keys"] == [(tmp_path / "id_ed25519.pub").read_text().strip()]
    assert config["disable_root"] is False and config["ssh_pwauth"] is False
    assert config["ssh_keys"] == {"ed25519_private": (tmp_path / "host_ed25519").read_text(),
                                  "ed25519_public": (tmp_path / "host_ed25519.pub").read_text().strip()}
    assert config["ssh_genkeytypes"] == ["ed25519"] and config["ssh_deletekeys"] is True
    assert config["bootcmd"] == [["swapon", "-L", SWAP_LABEL]]
    assert not list(tmp_path.glob("seed.d"))


def test_no_swap_no_bootcmd(tmp_path: Path) -> None:
    assert "bootcmd" not in yaml.safe_load(user_data(make_keys(tmp_path), swap=False))


def test_seed_iso_keeps_the_host_private_key_from_other_users(tmp_path: Path) -> None:
    """Issue 26 item 10: the seed carries the guest's host private key, so neither the ISO file on the host nor its
    user-data inside (Rock Ridge keeps the mode, which the guest's mount shows) may be readable by other users."""
    keys = make_keys(tmp_path)
    iso = tmp_path / "seed.iso"
    write_seed_iso(iso, {"meta-data": meta_data("nodeconf-1", "vm-a"), "user-data": user_data(keys, swap=False)})
    assert stat.S_IMODE(iso.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "host_ed25519").stat().st_mode) == 0o600
    listing = subprocess.run(["xorriso", "-indev", str(iso), "-lsl", "/"], capture_output=True, text=True,
                             check=True).stdout
    modes = {line.split()[-1].strip("'"): line.split()[0] for line in listing.splitlines() if line[:1] == "-"}
    assert modes["user-data"] == "-rw-------"
