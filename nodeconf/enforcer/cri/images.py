"""Images without a registry: OCI image archives written here, imported into the runtime's store with `ctr`,
labelled with the run's token, and removed only when they carry it.

Source: opencontainers/image-spec image-layout.md, manifest.md, config.md, descriptor.md @v1.1 (oci-layout,
index.json, blobs/sha256/<hex>, diff_ids of uncompressed layers); containerd `ctr images import` takes such an
archive and names the image by the `io.containerd.image.name` annotation; `ctr images label`, `ctr images rm`.
The stand-in pause program: x86-64 ELF (System V gABI, AMD64 psABI), Linux syscall 34 = pause(2).
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
import struct
import subprocess
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NAMESPACE = "k8s.io"  # the containerd namespace of the CRI plugin's images and containers
OWNER_LABEL = "io.nodeconf.owner"
IMAGE_NAME_ANNOTATION = "io.containerd.image.name"
REF_NAME_ANNOTATION = "org.opencontainers.image.ref.name"
COMMAND_TIMEOUT = 120.0
_ELF_BASE = 0x400000
# mov eax, 34 (pause); syscall; jmp back to the mov: waits for signals forever, as the pause container does.
_PAUSE_CODE = bytes.fromhex("b8220000000f05ebf7")


class ImageError(Exception):
    """An image nodeconf needs could not be written, imported or removed; the message says which and why."""


@dataclass(frozen=True)
class Entry:
    """One file system entry of a layer: a directory, a symlink (target) or a file (data, mode)."""

    path: str
    kind: str = "dir"
    target: str = ""
    data: bytes = b""
    mode: int = 0o755


def pause_program() -> bytes:
    """A static x86-64 Linux executable that loops on pause(2): one PT_LOAD segment, no sections."""
    header_size, segment_size = 64, 56
    size = header_size + segment_size + len(_PAUSE_CODE)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)  # 64-bit, little-endian, ELF version 1, System V
    header = ident + struct.pack("<HHIQQQIHHHHHH", 2, 0x3E, 1, _ELF_BASE + header_size + segment_size,
                                 header_size, 0, 0, header_size, segment_size, 1, 0, 0, 0)
    segment = struct.pack("<IIQQQQQQ", 1, 5, 0, _ELF_BASE, _ELF_BASE, size, size, 0x1000)
    return header + segment + _PAUSE_CODE


def layer(entries: Sequence[Entry]) -> bytes:
    """An uncompressed layer tar of the entries, owned by root, with fixed times (the same bytes each time)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for entry in entries:
            info = tarfile.TarInfo(entry.path.strip("/"))
            info.mode, info.mtime = entry.mode, 0
            if entry.kind == "dir":
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            elif entry.kind == "symlink":
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, entry.target, 0o777
                archive.addfile(info)
            else:
                info.size = len(entry.data)
                archive.addfile(info, io.BytesIO(entry.data))
    return buffer.getvalue()


def _blob(blobs: dict[str, bytes], media_type: str, data: bytes) -> dict[str, Any]:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"mediaType": media_type, "digest": digest, "size": len(data)}


def _json(doc: Mapping[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def oci_archive(name: str, entries: Sequence[Entry], config: Mapping[str, Any], architecture: str = "amd64") -> bytes:
    """An OCI image layout as a tar: one layer of `entries`, the image config (`config` as its `config` part),
    a manifest and index.json naming the image `name`."""
    blobs: dict[str, bytes] = {}
    data = layer(entries)
    layer_desc = _blob(blobs, "application/vnd.oci.image.layer.v1.tar", data)
    image_config = {"architecture": architecture, "os": "linux", "config": dict(config),
                    "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]}}
    config_desc = _blob(blobs, "application/vnd.oci.image.config.v1+json", _json(image_config))
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": config_desc, "layers": [layer_desc]}
    manifest_desc = _blob(blobs, "application/vnd.oci.image.manifest.v1+json", _json(manifest))
    manifest_desc["annotations"] = {IMAGE_NAME_ANNOTATION: name, REF_NAME_ANNOTATION: name.rsplit(":", 1)[-1]}
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": [manifest_desc]}
    files = {"oci-layout": _json({"imageLayoutVersion": "1.0.0"}), "index.json": _json(index),
             **{f"blobs/sha256/{d.split(':', 1)[1]}": b for d, b in blobs.items()}}
    return layer([Entry("blobs", "dir"), Entry("blobs/sha256", "dir"),
                  *(Entry(path, "file", data=body, mode=0o644) for path, body in files.items())])


def workload_entries(mount_points: Sequence[str], links: Mapping[str, str]) -> list[Entry]:
    """A rootfs of nothing but the mount points (and the merged-/usr symlinks) the node's programs run through."""
    dirs: dict[str, None] = {}
    for point in mount_points:
        parts = point.strip("/").split("/")
        for depth in range(1, len(parts) + 1):
            dirs["/".join(parts[:depth])] = None
    return [*(Entry(d) for d in dirs), *(Entry(n, "symlink", target=t) for n, t in sorted(links.items()))]


def pause_entries() -> list[Entry]:
    return [Entry("pause", "file", data=pause_program(), mode=0o755)]


def node_architecture() -> str:
    """The OCI architecture of this node ("amd64" for x86_64)."""
    machine = platform.machine()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


class ImageStore:
    """The runtime's image store through `ctr -n k8s.io`: imports labelled with the run's token."""

    def __init__(self, token: str, ctr: str = "ctr", address: str = "") -> None:
        self.token = token
        self.argv = [ctr, *(["--address", address] if address else []), "-n", NAMESPACE]

    def _ctr(self, *args: str, data: bytes | None = None) -> str:
        try:
            done = subprocess.run([*self.argv, *args], input=data, capture_output=True, timeout=COMMAND_TIMEOUT,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise ImageError(f"`ctr {' '.join(args)}`: {err}") from None
        if done.returncode != 0:
            raise ImageError(f"`ctr {' '.join(args)}` failed (exit {done.returncode}): "
                             f"{done.stderr.decode(errors='replace').strip()[-500:]}")
        return done.stdout.decode(errors="replace")

    def import_archive(self, name: str, archive: bytes, work: Path) -> None:
        """Import the archive (written to `work` first) and label the image as this run's."""
        work.mkdir(parents=True, exist_ok=True)
        path = work / "image.tar"
        path.write_bytes(archive)
        try:
            self._ctr("images", "import", str(path))
        finally:
            path.unlink(missing_ok=True)
        self._ctr("images", "label", name, f"{OWNER_LABEL}={self.token}")

    def ours(self) -> list[str]:
        """The names of the images that carry this run's token."""
        found = self._ctr("images", "ls", "-q", f'labels."{OWNER_LABEL}"=={self.token}')
        return [line.strip() for line in found.splitlines() if line.strip()]

    def remove_ours(self) -> list[str]:
        """Remove every image labelled with this run's token (nothing else); their names."""
        names = self.ours()
        for name in names:
            self._ctr("images", "rm", name)
        return names
