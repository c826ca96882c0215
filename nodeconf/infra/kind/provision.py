"""`--node kind[:CONFIG]`: create the kind cluster `nodeconf-CONFIG-RUNID` (a random run id: a name of this run's
own) from infra/kind/CONFIG.yaml with a kubeconfig nodeconf owns, wait for a Ready node, run the kube driver on it
and delete the cluster afterwards (also on failure and interrupt) unless kept. Only a cluster this run created is
ever deleted.

Sources (kind): pkg/cmd/kind/create/cluster/createcluster.go (--name, --config, --kubeconfig, --wait); its wait
only warns on timeout (create/actions/waitforready/waitforready.go), so readiness is checked here too;
pkg/internal/runtime/runtime.go (KIND_EXPERIMENTAL_PROVIDER) and pkg/cluster/provider.go DetectNodeProvider (docker,
then nerdctl, then podman); pkg/cluster/internal/create/create.go (a name in use is refused before anything is
created; a create that fails later removes the nodes it made); kind contexts are named `kind-NAME`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from nodeconf.errors import InputError
from nodeconf.infra.kind.configs import KindConfig, resolve_config
from nodeconf.infra.kind.records import ClusterRecord, read_records
from nodeconf.infra.kind.versions import check_gates, node_image_version
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.nodes.base import Node, NodeError
from nodeconf.nodes.shield import signals_deferred

CLUSTER_PREFIX = "nodeconf-"
# KIND_EXPERIMENTAL_PROVIDER value -> the executable kind then runs; unset (or unknown): kind tries these in order.
PROVIDERS: Mapping[str, str] = {"docker": "docker", "podman": "podman", "nerdctl": "nerdctl", "finch": "finch",
                                "nerdctl.lima": "nerdctl.lima"}
DETECTED = ("docker", "nerdctl", "podman")
COMMAND_TIMEOUT = 60.0  # kind version, kind get clusters
CREATE_TIMEOUT = 900.0  # pulls the node image on first use
READY_TIMEOUT = 300.0
DELETE_TIMEOUT = 300.0
STOP_GRACE = 10.0

Progress = Callable[[str], None]
# (kube context, kubeconfig, action to run when the node is closed) -> the opened node.
KubeOpener = Callable[[str, Path, Callable[[], None]], Node]


def run_id() -> str:
    """A random id for one run's cluster (24 bits: two runs on one host do not pick the same)."""
    return secrets.token_hex(3)


def cluster_name(config: str, run: str) -> str:
    """The kind cluster a run creates for a config: `nodeconf-CONFIG-RUNID` (`nodeconf clean` lists the prefix)."""
    return f"{CLUSTER_PREFIX}{config}-{run}"


def nodeconf_clusters() -> list[str]:
    """The kind clusters named `nodeconf-*` (none when kind is not on PATH); NodeError when kind cannot list them."""
    if not shutil.which("kind"):
        return []
    out = run_kind(["kind", "get", "clusters"], COMMAND_TIMEOUT)
    return [name for name in out.split() if name.startswith(CLUSTER_PREFIX)]


def missing_tools(env: Mapping[str, str] | None = None) -> list[str]:
    """What kind needs and PATH lacks: `kind` and the container engine (KIND_EXPERIMENTAL_PROVIDER's, else any)."""
    env = os.environ if env is None else env
    path = env.get("PATH", "")
    missing = [] if shutil.which("kind", path=path) else ["kind"]
    provider = env.get("KIND_EXPERIMENTAL_PROVIDER", "")
    if provider in PROVIDERS:
        if not shutil.which(PROVIDERS[provider], path=path):
            missing.append(f"{PROVIDERS[provider]} (KIND_EXPERIMENTAL_PROVIDER={provider})")
    elif not any(shutil.which(engine, path=path) for engine in DETECTED):
        missing.append(f"a container engine ({', '.join(DETECTED)})")
    return missing


def require_tools(env: Mapping[str, str] | None = None) -> None:
    """InputError naming what is missing from PATH, before anything is started."""
    missing = missing_tools(env)
    if missing:
        raise InputError(f"a kind node needs {' and '.join(missing)} on PATH", field="--node")


def _stop(process: subprocess.Popen[str]) -> None:
    """Stop a command running in its own process group: SIGTERM, then SIGKILL after STOP_GRACE seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(STOP_GRACE)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


class KindFailed(NodeError):
    """kind ran to its end and exited non-zero (as opposed to being stopped by nodeconf)."""


def run_kind(argv: list[str], timeout: float) -> str:
    """Run kind in its own process group (a terminal's Ctrl-C reaches nodeconf only, which decides); its stdout.

    KindFailed with kind's last stderr line when it fails; NodeError when it outlives `timeout`; stopped on any
    interrupt."""
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(process)
        raise NodeError(f"`{' '.join(argv)}` did not finish within {timeout:g} s") from None
    except BaseException:
        _stop(process)
        raise
    if process.returncode:
        lines = [line for line in err.splitlines() if line.strip()]
        raise KindFailed(f"`{' '.join(argv)}` failed (exit {process.returncode})"
                        + (f": {lines[-1].strip()}" if lines else ""))
    return out


class KindCluster:
    """The kind cluster `nodeconf-CONFIG-RUNID` of one run, with its own kubeconfig in a private temporary directory
    (the user's ~/.kube/config is never touched)."""

    def __init__(self, config: KindConfig, progress: Progress, kind: str = "kind") -> None:
        self.config = config
        self.progress = progress
        self.kind = kind
        self.name = cluster_name(config.name, run_id())
        self.context = f"kind-{self.name}"
        self.workdir = Path(tempfile.mkdtemp(prefix=f"{self.name}-"))
        self.kubeconfig = self.workdir / "kubeconfig"
        self.record = ClusterRecord.of_this_process(self.name)
        self.created = False  # this run's `kind create` made the cluster: only then is it ours to delete
        self.deleted = False

    def exists(self) -> bool:
        """True when kind already has a cluster of this name (kept by an earlier run, or another run's)."""
        out = run_kind([self.kind, "get", "clusters"], COMMAND_TIMEOUT)
        return self.name in out.split()

    def create(self) -> None:
        """`kind create cluster` with the config and this run's kubeconfig; kind waits for the control plane.

        The cluster is this run's once create succeeded, or once create was stopped midway (timeout, interrupt:
        what kind made so far stays, under the run's random name that kind listed nowhere before). When kind
        itself fails, it removed what it made, or refused a name in use, which is then another's: nothing to
        delete."""
        self.progress(f"creating kind cluster {self.name} from {self.config.path.name} (a few minutes the first "
                      "time: kind pulls its node image)")
        self.record.write()  # a run killed from here on leaves the proof `nodeconf clean --node kind` needs
        try:
            run_kind([self.kind, "create", "cluster", "--name", self.name, "--config", str(self.config.path),
                      "--kubeconfig", str(self.kubeconfig), "--wait", f"{READY_TIMEOUT:g}s"], CREATE_TIMEOUT)
        except KindFailed:
            self.record.remove()
            raise
        except BaseException:
            self.created = True
            raise
        self.created = True

    def delete(self) -> None:
        """Delete the cluster (once; SIGINT/SIGTERM held until done) and the kubeconfig; NodeError if it stays."""
        if self.deleted:
            return
        self.deleted = True
        try:
            if self.created:
                self.progress(f"deleting kind cluster {self.name}")
                with signals_deferred(f"kind cluster {self.name} is deleted"):
                    run_kind([self.kind, "delete", "cluster", "--name", self.name, "--kubeconfig",
                              str(self.kubeconfig)], DELETE_TIMEOUT)
            self.record.remove()
        except NodeError as err:
            raise NodeError(f"kind cluster {self.name} was not deleted ({err}); delete it with "
                            f"`kind delete cluster --name {self.name}`") from None
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def keep(self) -> None:
        """Leave the cluster running; only the private kubeconfig goes."""
        self.deleted = True
        self.record.remove()  # the user's from now on: clean never deletes it
        shutil.rmtree(self.workdir, ignore_errors=True)
        self.progress(f"kept kind cluster {self.name} (keep=1): `kind export kubeconfig --name {self.name}` adds "
                      f"its context {self.context} to your kubeconfig; `kind delete cluster --name {self.name}` "
                      "removes it")


def clean_leftover_clusters(dry_run: bool) -> list[str]:
    """Delete the kind clusters this host's nodeconf runs created and left when killed (records.py: a record whose
    run is gone); one line per record. A cluster without a record, or whose run still runs, is never deleted."""
    records = read_records()
    if not records:
        return []
    listed = set(run_kind(["kind", "get", "clusters"], COMMAND_TIMEOUT).split())
    lines = []
    for record in records:
        if record.run_alive():
            lines.append(f"kind cluster {record.name}: its run (pid {record.pid}) still runs: kept")
            continue
        if record.name in listed and not dry_run:
            with tempfile.TemporaryDirectory() as scratch, signals_deferred(f"kind cluster {record.name} is deleted"):
                run_kind(["kind", "delete", "cluster", "--name", record.name, "--kubeconfig",
                          str(Path(scratch) / "kubeconfig")], DELETE_TIMEOUT)  # the user's kubeconfig untouched
        if not dry_run:
            record.remove()
        done = "would be " if dry_run else ""
        outcome = f"its run (pid {record.pid}) is gone; {done}deleted" if record.name in listed else (
            f"gone already; its record {done}removed")
        lines.append(f"kind cluster {record.name}: {outcome}")
    return lines


def wait_ready(context: str, kubeconfig: Path, timeout: float, sleep: Callable[[float], None] = time.sleep,
               clock: Callable[[], float] = time.monotonic) -> None:
    """Poll the API until a Linux node is Ready (what the kube driver picks); NodeError after `timeout`."""
    from nodeconf.nodes.kube.api import ClientKubeApi, load_kube_context
    from nodeconf.nodes.kube.opener import choose_node

    api_client, _ = load_kube_context(context, str(kubeconfig))
    api = ClientKubeApi(api_client)
    deadline = clock() + timeout
    try:
        while True:
            try:
                choose_node(api.list_nodes(), None)
                return
            except NodeError as err:
                if clock() >= deadline:
                    raise NodeError(f"context {context}: no Ready node within {timeout:g} s ({err})") from None
            sleep(2.0)
    finally:
        api.close()


def open_kube_node(context: str, kubeconfig: Path, after_close: Callable[[], None]) -> Node:
    """Wait for a Ready node, then open the kube driver on the context of the run's kubeconfig."""
    from nodeconf.nodes.kube.opener import open_node

    wait_ready(context, kubeconfig, READY_TIMEOUT)
    return open_node(context, config_file=str(kubeconfig), after_close=(after_close,))


def check_profile(profile: str | None, version: tuple[int, int] | None, where: str) -> None:
    """InputError when --profile names another Kubernetes version than the node image runs."""
    if profile is not None and version is not None and profile != f"{version[0]}.{version[1]}":
        raise InputError(f"{where} runs Kubernetes {version[0]}.{version[1]}, not {profile}: leave --profile out "
                         f"(the node's version decides) or name a {profile} image in the config's nodes[].image",
                         field="--profile")


def checked_config(config_name: str | None, kubelet_config: KubeletConfig | None,
                   profile: str | None) -> tuple[KindConfig, tuple[int, int] | None, str]:
    """The config a kind node uses (see `resolve_config`), the Kubernetes version of its node image and where that
    was read; InputError (nothing started) when kind or a container engine is missing, the config is unknown, its
    gates do not fit the node image or --profile names another version than the image runs."""
    require_tools()
    config = resolve_config(config_name, kubelet_config)
    version, where = node_image_version(config.cluster, run_kind(["kind", "version"], COMMAND_TIMEOUT))
    check_gates(config.kubelet.feature_gates, version, where, str(config.path))
    check_profile(profile, version, where)
    return config, version, where


def open_kind_node(config_name: str | None, *, kubelet_config: KubeletConfig | None, keep: bool,
                   profile: str | None, progress: Progress, open_kube: KubeOpener = open_kube_node) -> Node:
    """Create the kind cluster for the config (see `resolve_config`), open the kube driver on it and return the
    node; closing the node deletes the cluster unless `keep`. InputError (nothing started) when kind or a
    container engine is missing, the config is unknown, its gates do not fit the node image, --profile names
    another version than the image runs, or a cluster of that name exists; NodeError when kind fails.

    Without `profile` the node's kubelet version decides the profile (KubeNode.configure).
    """
    config, version, where = checked_config(config_name, kubelet_config, profile)
    progress(f"kind config {config.path.name}: {where}"
             + (f" (Kubernetes {version[0]}.{version[1]})" if version else ""))
    cluster = KindCluster(config, progress)
    try:
        if cluster.exists():
            raise InputError(f"a kind cluster {cluster.name} already exists (another's: this run's random name "
                             f"is taken); run again", field="--node")
        cluster.create()
        return open_kube(cluster.context, cluster.kubeconfig, cluster.keep if keep else cluster.delete)
    except BaseException as failure:
        try:
            if keep and cluster.created:
                cluster.keep()
            else:
                cluster.delete()
        except NodeError as err:
            progress(str(err))
            raise failure from err
        raise
