"""The images nodeconf imports into a CRI runtime's store: an OCI image layout whose digests, manifest and config
hang together as image-spec v1.1 says, a workload rootfs of mount points only, and the stand-in pause program,
which this (x86-64) machine runs: it sits in pause(2) until a signal ends it."""

from __future__ import annotations

import hashlib
import io
import json
import platform
import signal
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from nodeconf.enforcer.cri import images


def members(archive: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return {m.name: m for m in tar.getmembers()}


def files(archive: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def blob(layout: dict[str, bytes], digest: str) -> bytes:
    algorithm, hexdigest = digest.split(":")
    data = layout[f"blobs/{algorithm}/{hexdigest}"]
    assert hashlib.sha256(data).hexdigest() == hexdigest
    return data


def test_an_oci_layout_names_the_image_and_its_digests_hold() -> None:
    entries = images.workload_entries(["proc", "sys/fs/cgroup", "usr"], {"bin": "usr/bin"})
    layout = files(images.oci_archive("nodeconf.local/workload:t1", entries, {"Env": ["A=1"]}))
    assert json.loads(layout["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    (descriptor,) = json.loads(layout["index.json"])["manifests"]
    assert descriptor["annotations"] == {"io.containerd.image.name": "nodeconf.local/workload:t1",
                                         "org.opencontainers.image.ref.name": "t1"}
    manifest = json.loads(blob(layout, descriptor["digest"]))
    assert len(blob(layout, descriptor["digest"])) == descriptor["size"]
    config = json.loads(blob(layout, manifest["config"]["digest"]))
    (layer,) = manifest["layers"]
    assert layer["mediaType"] == "application/vnd.oci.image.layer.v1.tar"
    assert config["rootfs"] == {"type": "layers", "diff_ids": [layer["digest"]]}  # uncompressed: same digest
    assert (config["os"], config["config"]) == ("linux", {"Env": ["A=1"]})
    rootfs = members(blob(layout, layer["digest"]))
    assert {n: (m.isdir(), m.issym() and m.linkname) for n, m in rootfs.items()} == {
        "proc": (True, False), "sys": (True, False), "sys/fs": (True, False), "sys/fs/cgroup": (True, False),
        "usr": (True, False), "bin": (False, "usr/bin")}


def test_the_same_image_is_the_same_bytes() -> None:
    first, again = (images.oci_archive("a:b", images.pause_entries(), {}) for _ in range(2))
    assert first == again


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the stand-in pause program is x86-64")
def test_the_pause_program_waits_in_pause_until_killed(tmp_path: Path) -> None:
    program = tmp_path / "pause"
    program.write_bytes(images.pause_program())
    program.chmod(0o755)
    proc = subprocess.Popen([str(program)])
    try:
        deadline = time.monotonic() + 10
        syscall = ""
        while time.monotonic() < deadline and syscall != "34":  # x86-64 __NR_pause
            syscall = Path(f"/proc/{proc.pid}/syscall").read_text().split()[0]
            time.sleep(0.02)
        assert syscall == "34"
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == -signal.SIGTERM
    finally:
        proc.kill()
        proc.wait()
