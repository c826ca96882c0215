"""The node spec is parsed once and fully; a bad one is one line (never echoing a password) and, through
`nodeconf run`, exit 2 before anything starts (issue 12; issue 10 item 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nodeconf.errors import NodeSpecError, UsageError
from nodeconf.infra.kind.node_kind import KindSpec
from nodeconf.nodes.enforced.opener import enforcer_settings
from nodeconf.nodes.kube.node_kind import KubeSpec
from nodeconf.nodes.spec import EnforcerOptions, NodeSpec, VmSize, chosen_specs, parse_node_spec
from nodeconf.nodes.ssh_login import SshAuth, SshTarget

ROOT = Path(__file__).resolve().parents[3]
HOST_CPUS = os.cpu_count() or 1
PASSWORD = "hunter2secret"


@pytest.fixture(autouse=True)
def no_ssh_config_or_agent(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """ssh:// specs read ~/.ssh/config, ~/.ssh/known_hosts and SSH_AUTH_SOCK: none of this user's."""
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    """Placeholders for the tables: a readable key and known_hosts, a missing file, an existing canary dir."""
    (tmp_path / "id_ed25519").write_text("not used: the spec only has to find a readable file\n")
    (tmp_path / "known_hosts").write_text("[127.0.0.1]:2222 ssh-ed25519 AAAA\n")
    (tmp_path / "canary").mkdir()
    (tmp_path / "canary" / "keep").write_text("must survive\n")
    return {"key": str(tmp_path / "id_ed25519"), "kh": str(tmp_path / "known_hosts"),
            "missing": str(tmp_path / "missing"), "canary": str(tmp_path / "canary"), "tmp": str(tmp_path)}


GOOD = [
    pytest.param("vm", NodeSpec("vm"), "vm", id="vm"),
    pytest.param("vm?memory=6144&swap=0&cpus=1&fault=cpu-weight-formula=linear",
                 NodeSpec("vm", (("memory", "6144"), ("swap", "0"), ("cpus", "1"),
                                 ("fault", "cpu-weight-formula=linear")),
                          vm=VmSize(6144, 0, 1), enforcer=EnforcerOptions(faults=("cpu-weight-formula=linear",))),
                 "vm", id="vm-options"),
    pytest.param("vm?memory=6Gi&swap=2048Mi", NodeSpec("vm", (("memory", "6Gi"), ("swap", "2048Mi")),
                                                       vm=VmSize(6144, 2048)), "vm", id="vm-sizes-as-quantities"),
    pytest.param("vm?memory=6442450944&swap=0Gi", NodeSpec("vm", (("memory", "6442450944"), ("swap", "0Gi")),
                                                           vm=VmSize(6442450944, 0)), "vm",
                 id="vm-bare-number-is-mib"),
    pytest.param("vm?memory=0.5Gi", NodeSpec("vm", (("memory", "0.5Gi"),), vm=VmSize(512)), "vm",
                 id="vm-fractional-quantity-of-whole-mib"),
    pytest.param("local", NodeSpec("local"), "local", id="local"),
    pytest.param("local?root=/sys/fs/cgroup/test.slice&backoff=1.5&python=python3.11"
                 "&fault=cpu-weight-formula=linear&fault=memory-throttling-factor=0.5",
                 NodeSpec("local", (("root", "/sys/fs/cgroup/test.slice"), ("backoff", "1.5"), ("python", "python3.11"),
                                    ("fault", "cpu-weight-formula=linear"), ("fault", "memory-throttling-factor=0.5")),
                          enforcer=EnforcerOptions(faults=("cpu-weight-formula=linear", "memory-throttling-factor=0.5"),
                                                   backoff=1.5, cgroup_root="/sys/fs/cgroup/test.slice",
                                                   python="python3.11")),
                 "local", id="local-options"),
    pytest.param("local?dir={tmp}/fresh&python=" + sys.executable, None, "local", id="local-fresh-dir-and-python"),
    pytest.param("kube", NodeSpec("kube", own=KubeSpec()), "kube", id="kube-current-context"),
    pytest.param("kube:kind-nodeconf", NodeSpec("kube", own=KubeSpec("kind-nodeconf")), "kube-kind-nodeconf",
                 id="kube"),
    pytest.param("kube:arn:aws:eks:eu-west-1:1:cluster/ci",
                 NodeSpec("kube", own=KubeSpec("arn:aws:eks:eu-west-1:1:cluster/ci")),
                 "kube-arn-aws-eks-eu-west-1-1-cluster-ci", id="kube-context-with-colons"),
    pytest.param("kube:kind-a?node=kind-worker2", NodeSpec("kube", (("node", "kind-worker2"),), own=KubeSpec("kind-a")),
                 "kube-kind-a", id="kube-one-node"),
    pytest.param("kube:kind-a?nodes=all&max=50", NodeSpec("kube", (("nodes", "all"), ("max", "50")),
                                                          own=KubeSpec("kind-a")),
                 "kube-kind-a", id="kube-whole-cluster"),
    pytest.param("kube?nodes=pool=gpu,zone!=a&name=gpu",
                 NodeSpec("kube", (("nodes", "pool=gpu,zone!=a"), ("name", "gpu")), own=KubeSpec()), "gpu",
                 id="kube-selector"),
    pytest.param("vm?debian=trixie&init=systemd&runtime=crun", None, "vm", id="vm-variant"),
    pytest.param("vm?image={key}&uefi=1&memory=4096", None, "vm", id="vm-vendor-image"),
    pytest.param("local?runtime=direct", NodeSpec("local", (("runtime", "direct"),),
                                                  enforcer=EnforcerOptions(runtime="direct")), "local",
                 id="local-runtime-direct"),
    pytest.param("vm?image={key}&runtime=cri", None, "vm", id="vm-vendor-image-runtime-cri"),
    pytest.param("kind", NodeSpec("kind", own=KindSpec()), "kind", id="kind-matching-the-kubelet-config"),
    pytest.param("kind:memoryqos?keep=1", NodeSpec("kind", (("keep", "1"),), own=KindSpec("memoryqos", keep=True)),
                 "kind-memoryqos", id="kind-config-kept"),
    pytest.param("ssh://admin@10.0.0.5:2222?key={key}&known_hosts={kh}", None, "ssh-10.0.0.5-2222", id="ssh"),
    pytest.param("ssh://node.example?key={key}&host_key=ssh-ed25519%20AAAAC3Nz+/a=", None, "ssh-node.example-22",
                 id="ssh-default-user-port-host-key"),
]


@pytest.mark.parametrize(("text", "expected", "name"), GOOD)
def test_good_specs(files: dict[str, str], text: str, expected: NodeSpec | None, name: str) -> None:
    spec = parse_node_spec(text.format(**files))
    if expected is not None:
        assert spec == expected
    assert spec.name == name
    assert parse_node_spec(spec.display) == spec, "the redacted text is the canonical spec"
    assert str(spec) == spec.display and repr(spec) == f"NodeSpec({spec.display!r})"


def test_ssh_spec_fields(files: dict[str, str]) -> None:
    spec = parse_node_spec("ssh://admin@10.0.0.5:2222?key={key}&known_hosts={kh}&dir=/opt/nc-test".format(**files))
    assert spec.ssh is not None
    assert spec.ssh.target == SshTarget("admin", "10.0.0.5", 2222)
    assert (spec.ssh.auth, spec.ssh.known_hosts, spec.ssh.host_key) == (SshAuth((Path(files["key"]),)),
                                                                         (Path(files["kh"]),), None)
    assert enforcer_settings(spec).remote_dir == "/opt/nc-test"


def test_enforcer_settings_default_what_the_spec_leaves_out() -> None:
    settings = enforcer_settings(parse_node_spec("local?backoff=0&cpu-weight-formula=linear"))
    assert (settings.backoff, settings.cpu_weight_formula, settings.cgroup_root) == (0.0, "linear", "/sys/fs/cgroup")


@pytest.mark.parametrize(("text", "node_runtime"), [
    ("vm", None), ("vm?init=systemd&runtime=containerd", None), ("local", "auto"), ("local?runtime=direct", "direct"),
    ("vm?image={key}", "auto"), ("vm?image={key}&runtime=cri", "cri"),
    ("ssh://root@h?key={key}&known_hosts={kh}", "auto"),
], ids=["reference-vm", "reference-variant", "local", "local-direct", "vendor-image", "vendor-image-cri", "ssh"])
def test_a_node_with_a_runtime_of_its_own_chooses_it_at_start(files: dict[str, str], text: str,
                                                             node_runtime: str | None) -> None:
    """A reference VM's runtime is its variant's; local, ssh:// and a vendor image probe theirs unless told."""
    assert enforcer_settings(parse_node_spec(text.format(**files))).node_runtime == node_runtime


BAD = [
    ("unknown-scheme", "docker", "unknown node spec 'docker'"),
    ("scheme-prefix", "vmx", "unknown node spec 'vmx'"),
    ("ssh-port-too-big", "ssh://root@h:99999?key={key}&known_hosts={kh}", "the port must be 1-65535, got '99999'"),
    ("ssh-port-zero", "ssh://root@h:0?key={key}&known_hosts={kh}", "the port must be 1-65535, got '0'"),
    ("ssh-port-empty", "ssh://root@h:?key={key}&known_hosts={kh}", "the port must be 1-65535, got ''"),
    ("ssh-port-name", "ssh://root@h:ssh?key={key}&known_hosts={kh}", "the port must be 1-65535, got 'ssh'"),
    ("ssh-password", f"ssh://root:{PASSWORD}@h:22?key={{key}}&known_hosts={{kh}}", "passwords are not accepted"),
    ("ssh-password-with-at-and-query", f"ssh://root:{PASSWORD}?x@y@h?key={{key}}", "passwords are not accepted"),
    ("ssh-empty-user", "ssh://@h?key={key}&known_hosts={kh}", "the user must be a non-empty login name"),
    ("ssh-empty-host", "ssh://root@?key={key}&known_hosts={kh}", "the host must be a non-empty host name"),
    ("ssh-empty-host-with-port", "ssh://root@:22?key={key}&known_hosts={kh}", "the host must be a non-empty"),
    ("ssh-nothing", "ssh://", "the host must be a non-empty host name"),
    ("ssh-path", "ssh://root@h/path?key={key}&known_hosts={kh}", "is not ssh://user@host[:port]"),
    ("ssh-no-key", "ssh://root@h?known_hosts={kh}", "has no key: give ?key=FILE"),
    ("ssh-missing-key-file", "ssh://root@h?key={missing}&known_hosts={kh}", "key={missing} is not a readable file"),
    ("ssh-key-is-a-directory", "ssh://root@h?key={tmp}&known_hosts={kh}", "is not a readable file"),
    ("ssh-no-host-key", "ssh://root@h?key={key}", "needs the node's host key"),
    ("ssh-missing-known-hosts", "ssh://root@h?key={key}&known_hosts={missing}", "known_hosts={missing} is not a"),
    ("ssh-bad-host-key", "ssh://root@h?key={key}&host_key=ssh-ed25519", "host_key must be `TYPE BASE64`"),
    ("unknown-option", "vm?colour=red",
     "unknown option 'colour' (allowed for vm: memory, swap, cpus, debian, init, runtime, image, uefi, fault"),
    ("vm-option-on-local", "local?memory=4096", "unknown option 'memory'"),
    ("kube-option", "kube:ctx?key=x", "unknown option 'key' (allowed for kube: node, nodes, max, name)"),
    ("kube-node-and-nodes", "kube:ctx?node=w1&nodes=all", "node= (one node) and nodes= (several) do not go"),
    ("kube-bad-node-name", "kube:ctx?node=W_1", "node= must be a Kubernetes node name"),
    ("kube-max-without-nodes", "kube:ctx?max=5", "max= goes with nodes="),
    ("kube-max-zero", "kube:ctx?nodes=all&max=0", "max must be a whole number 1-200 (nodes at most), got '0'"),
    ("kube-max-above-ceiling", "kube:ctx?nodes=all&max=201", "max must be a whole number 1-200"),
    ("kube-selector-control-character", "kube:ctx?nodes=a%0Ab", "nodes= must be all or a label selector"),
    ("kube-empty-context", "kube:", "kube: needs a context name after the colon"),
    ("kube-blank-context", "kube: ", "kube: needs a context name after the colon"),
    ("option-without-value", "vm?memory", "option 'memory' needs a value"),
    ("option-empty-value", "local?dir=", "option 'dir' needs a value"),
    ("empty-option", "vm?memory=1024&&swap=1", "unknown option ''"),
    ("repeated-option", "vm?memory=1024&memory=2048", "option 'memory' is given more than once"),
    ("memory-zero", "vm?memory=0",
     "memory must be a quantity (6Gi) or a whole number of MiB (6144), at least 256Mi, got '0'"),
    ("memory-below-minimum", "vm?memory=255", "at least 256Mi, got '255'"),
    ("memory-quantity-below-minimum", "vm?memory=255Mi", "at least 256Mi, got '255Mi'"),
    ("memory-not-a-number", "vm?memory=abc", "memory must be a quantity (6Gi) or a whole number of MiB"),
    ("memory-not-whole-mib", "vm?memory=6G", "a whole number of MiB (6144), at least 256Mi, got '6G'"),
    ("memory-beyond-int64", "vm?memory=9Ei", "got '9Ei'"),
    ("memory-mib-beyond-int64", "vm?memory=8796093022208", "got '8796093022208'"),
    ("memory-5000-digits", "vm?memory=" + "9" * 5000, "memory must be a quantity"),
    ("swap-negative", "vm?swap=-1", "swap must be a quantity (6Gi) or a whole number of MiB (6144), at least 0Mi"),
    ("swap-negative-quantity", "vm?swap=-1Gi", "swap must be a quantity"),
    ("swap-fraction", "vm?swap=1.5Ki", "swap must be a quantity"),
    ("cpus-zero", "vm?cpus=0", f"cpus must be a whole number 1-{HOST_CPUS}"),
    ("cpus-more-than-host", f"vm?cpus={HOST_CPUS + 1}", f"(this host has {HOST_CPUS})"),
    ("backoff-nan", "local?backoff=nan", "backoff must be seconds (a finite number >= 0), got 'nan'"),
    ("backoff-inf", "vm?backoff=inf", "backoff must be seconds"),
    ("backoff-negative", "local?backoff=-1", "backoff must be seconds"),
    ("backoff-word", "local?backoff=soon", "backoff must be seconds"),
    ("bad-fault", "vm?fault=cpu-weight-formula=cubic", "bad fault 'cpu-weight-formula=cubic'"),
    ("bad-cpu-weight-formula", "local?cpu-weight-formula=cubic", "cpu-weight-formula must be one of linear"),
    ("dir-existing", "local?dir={canary}", "dir={canary} already exists"),
    ("dir-root", "local?dir=/", "dir= must be an absolute, normalized path"),
    ("dir-relative", "local?dir=work/nodeconf", "dir= must be an absolute, normalized path"),
    ("dir-dotdot", "local?dir={tmp}/a/../b", "without .., got"),
    ("dir-shell", "ssh://root@h?key={key}&known_hosts={kh}&dir=/opt/x;rm", "dir= must be an absolute"),
    ("root-outside-cgroupfs", "local?root={tmp}", "root= must be /sys/fs/cgroup or a cgroup under it"),
    ("root-prefix-only", "local?root=/sys/fs/cgroupx", "root= must be /sys/fs/cgroup or a cgroup under it"),
    ("root-dotdot", "vm?root=/sys/fs/cgroup/../../etc", "root= must be an absolute, normalized path"),
    ("python-shell", "local?python=python3;reboot", "python= must be an absolute path or a program name"),
    ("python-env-assignment", "vm?python=PYTHONPATH=/x", "python= must be an absolute path or a program name"),
    ("python-missing", "local?python={missing}", "python={missing} is not an executable file"),
    ("python-not-executable", "local?python={key}", "is not an executable file"),
    ("vm-unknown-debian", "vm?debian=buster", "unknown debian='buster': choose one of bullseye|bookworm|trixie|sid"),
    ("vm-unknown-init", "vm?init=openrc", "unknown init='openrc': choose one of minimal|systemd"),
    ("vm-unknown-runtime", "vm?runtime=youki", "unknown runtime='youki': choose one of direct|runc|crun"),
    ("vm-containerd-minimal", "vm?debian=trixie&runtime=containerd", "runtime=containerd needs init=systemd: "),
    ("local-variant", "local?debian=sid", "unknown option 'debian'"),
    ("vm-image-missing", "vm?image={missing}", "image={missing} is not a readable file"),
    ("vm-image-with-variant", "vm?image={key}&debian=sid", "image= brings its own layers; debian= cannot go with it"),
    ("vm-uefi-without-image", "vm?uefi=1", "uefi= goes with image=PATH"),
    ("local-runtime-oci", "local?runtime=runc", "runtime must be one of cri|direct (absent: the node's CRI runtime "
     "when it has one, else direct), got 'runc'"),
    ("ssh-runtime-name", "ssh://root@h?key={key}&known_hosts={kh}&runtime=containerd", "runtime must be one of "
     "cri|direct"),
    ("vm-image-runtime-layer", "vm?image={key}&runtime=crun", "runtime must be one of cri|direct"),
    ("vm-reference-runtime-cri", "vm?runtime=cri", "unknown runtime='cri': choose one of direct|runc|crun|containerd"),
    ("vm-uefi-word", "vm?image={key}&uefi=yes", "uefi must be 0 or 1, got 'yes'"),
    ("kind-empty-config", "kind:", "kind: needs a config name of nodeconf/infra/kind/"),
    ("kind-config-path", "kind:../etc/x", "kind: needs a config name of nodeconf/infra/kind/"),
    ("kind-keep-word", "kind?keep=yes", "keep must be 0 or 1, got 'yes'"),
    ("kind-enforcer-option", "kind?fault=cpu-weight-formula=linear", "unknown option 'fault'"),
]


@pytest.mark.parametrize(("text", "message"), [pytest.param(t, m, id=i) for i, t, m in BAD])
def test_bad_specs_are_one_line_usage_errors(files: dict[str, str], text: str, message: str) -> None:
    with pytest.raises(NodeSpecError) as info:
        parse_node_spec(text.format(**files))
    assert isinstance(info.value, UsageError)
    assert message.format(**files) in str(info.value)
    assert "\n" not in str(info.value)
    assert PASSWORD not in str(info.value)
    assert Path(files["canary"], "keep").is_file(), "a refused spec touches nothing"


def test_the_first_spec_is_used_and_vm_is_the_default() -> None:
    assert chosen_specs(None) == [parse_node_spec("vm")]
    assert chosen_specs([parse_node_spec("local")]) == [parse_node_spec("local")]


# Runs `python -m nodeconf` with an audit hook that records, at exit, every process it started (a Popen by its
# program and first argument) and whether pytest was imported: what "nothing started" means, counted, not timed.
WATCHED = """
import atexit, json, runpy, sys
started, record = [], sys.argv.pop(1)
def hook(event, args):
    if event == "subprocess.Popen":
        started.append(" ".join(map(str, args[1][:2])))
    elif event in ("os.exec", "os.posix_spawn", "os.spawn", "os.system", "os.fork"):
        started.append(event)
sys.addaudithook(hook)
atexit.register(lambda: print(json.dumps({"started": started, "pytest": "pytest" in sys.modules}),
                              file=open(record, "w")))
sys.argv[0] = "nodeconf"
runpy.run_module("nodeconf", run_name="__main__", alter_sys=True)
"""


def _nodeconf_run(*args: str, reports: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`nodeconf run ARGS` and what it started: {"started": [processes], "pytest": imported or not}."""
    record = reports.parent / "started.json"
    done = subprocess.run([sys.executable, "-c", WATCHED, str(record), "run", *args, "--reports", str(reports)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    return done, json.loads(record.read_text())


@pytest.mark.parametrize(("text", "message"), [pytest.param(t, m, id=i) for i, t, m in BAD])
def test_nodeconf_run_refuses_a_bad_spec_before_anything_starts(files: dict[str, str], tmp_path: Path, text: str,
                                                                 message: str) -> None:
    """Exit 2 with one line, no process started, pytest not even imported, no reports written."""
    done, started = _nodeconf_run("--node", text.format(**files), reports=tmp_path / "reports")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "argument --node" in done.stderr
    assert message.format(**files) in done.stderr and PASSWORD not in done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "reports").exists()
    assert started == {"started": [], "pytest": False}
    assert Path(files["canary"], "keep").is_file()


def test_nodeconf_run_refuses_two_nodes_of_one_name(tmp_path: Path) -> None:
    done, started = _nodeconf_run("--node", "vm", "--node", "vm?memory=1024", reports=tmp_path / "reports")
    assert (done.returncode, done.stderr) == (
        2, "nodeconf: --node: two nodes are named 'vm': give each its own name (vm?name=b, or name: in a matrix "
        "file)\n")
    assert not (tmp_path / "reports").exists() and started == {"started": [], "pytest": False}


def test_nodeconf_run_refuses_a_corrupt_vendor_image_before_anything_boots(tmp_path: Path) -> None:
    """A qcow2 whose tables are cut off: `qemu-img check` fails, one line, exit 2, no reports (nothing booted)."""
    image = tmp_path / "vendor.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(image), "64M"], check=True)
    image.write_bytes(image.read_bytes()[:1024])
    done, started = _nodeconf_run("--node", f"vm?image={image}", reports=tmp_path / "reports")
    assert started["started"] and all(c.startswith("qemu-img ") for c in started["started"]), "reads, no boot"
    assert started["pytest"] is False
    assert done.returncode == 2 and done.stderr.startswith("nodeconf: --node: ") and done.stderr.count("\n") == 1
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize(("argv", "sizes"), [
    pytest.param(["--memory", "6Gi", "--swap", "512Mi"], (6144, 512), id="quantities"),
    pytest.param(["--memory", "3072", "--swap", "0"], (3072, 0), id="bare-numbers-are-mib"),
])
def test_node_up_takes_sizes_as_the_node_spec_does(argv: list[str], sizes: tuple[int, int],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from nodeconf.cli import main as cli_main
    from nodeconf.cli import node as node_cli

    seen: list[tuple[int, int]] = []

    def record(args: argparse.Namespace) -> int:
        seen.append((args.memory, args.swap))
        return 0

    monkeypatch.setattr(node_cli, "run", record)
    assert cli_main.main(["node", "up", *argv]) == 0
    assert seen == [sizes]


@pytest.mark.parametrize(("argv", "message"), [
    pytest.param(["--memory", "6G"], "--memory must be a quantity (6Gi) or a whole number of MiB (6144), at least "
                 "256Mi, got '6G'", id="not-whole-mib"),
    pytest.param(["--memory", "255Mi"], "at least 256Mi, got '255Mi'", id="below-minimum"),
    pytest.param(["--swap=-1Gi"], "--swap must be a quantity", id="negative-swap"),
])
def test_node_up_refuses_a_bad_size_in_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from nodeconf.cli import main as cli_main
    from nodeconf.cli import node as node_cli

    monkeypatch.setattr(node_cli, "run", lambda args: pytest.fail("the VM would boot"))
    with pytest.raises(SystemExit) as exited:
        cli_main.main(["node", "up", *argv])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
