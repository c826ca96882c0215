"""Every node kind of the registry answers every question a run and `nodeconf clean` ask (issue 27 item 2): its
options, its expansion, its preflight, opening, cleanup and kubelet-config advice, each by its own record."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from nodeconf.errors import NodeSpecError
from nodeconf.infra.kind.node_kind import KindSpec
from nodeconf.kubelet_config import KubeletConfig, kubelet_config_from_dict
from nodeconf.nodes.base import Node
from nodeconf.nodes.kinds import NodeKind, node_kind
from nodeconf.nodes.spec import KINDS, NodeSpec, SpecOptions, parse_node_spec, whole_number

# One concrete spec per scheme; none of them names a resource of this machine or a reachable host.
EXAMPLES = {
    "vm": "vm?memory=512Mi",
    "local": "local?backoff=1",
    "ssh": "ssh://root@192.0.2.1?key={tmp}/key&known_hosts={tmp}/known_hosts",  # TEST-NET-1 (RFC 5737)
    "kube": "kube:nodeconf-no-such-context?node=worker-1",
    "kind": "kind:noswap?keep=1",
}
LIMITED_SWAP = kubelet_config_from_dict({"kind": "KubeletConfiguration", "memorySwap": {"swapBehavior": "LimitedSwap"}},
                                       "test.yaml")
# The questions only a kind itself can answer (NodeKind's abstract methods).
OWN_ANSWERS = ("parse", "open", "clean", "advice")


@pytest.fixture
def tmp(tmp_path: Path) -> str:
    (tmp_path / "key").write_text("not used: the spec only has to find a readable file\n")
    (tmp_path / "known_hosts").write_text("192.0.2.1 ssh-ed25519 AAAA\n")
    return str(tmp_path)


def test_every_scheme_has_an_example() -> None:
    assert list(EXAMPLES) == list(KINDS)


@pytest.mark.parametrize("scheme", list(KINDS))
def test_each_kind_answers_every_question(scheme: str, tmp: str) -> None:
    kind = node_kind(scheme)
    assert kind.scheme == scheme
    assert not type(kind).__abstractmethods__
    assert all(getattr(type(kind), q) is not getattr(NodeKind, q) for q in OWN_ANSWERS), "answered by the base"

    spec = parse_node_spec(EXAMPLES[scheme].format(tmp=tmp))  # options: its own, each checked
    assert spec.scheme == scheme and parse_node_spec(spec.display) == spec
    assert kind.expand(spec) == [spec]  # a concrete spec stands for itself, asked without I/O
    # one enforcer per machine: only a machine nodeconf did not create can be named by two specs
    assert (kind.machine(spec) is not None) == (scheme in ("local", "ssh"))

    glue = "&" if "?" in EXAMPLES[scheme] else "?"
    with pytest.raises(NodeSpecError) as refused:
        parse_node_spec(EXAMPLES[scheme].format(tmp=tmp) + f"{glue}no-such-option=1")
    assert f"allowed for {scheme}: {', '.join((*kind.options, 'name'))})" in str(refused.value)

    advice = kind.advice(LIMITED_SWAP)
    assert advice and "\n" not in advice


def test_the_kind_record_names_the_config_that_gives_a_kubelet_config() -> None:
    """kind's advice, asked by the kube driver for any kind node, names the config file (infra/kind/limitedswap.yaml
    sets swapBehavior LimitedSwap); a kube node's cannot name one."""
    assert "limitedswap.yaml" in node_kind("kind").advice(LIMITED_SWAP)
    assert ".yaml" not in node_kind("kube").advice(LIMITED_SWAP)


@pytest.mark.parametrize("text", ["vm:x", "local:x", "ssh", "ssh:x", "kinds", "ftp://nowhere"])
def test_a_target_the_kind_does_not_take_is_an_unknown_spec(text: str) -> None:
    with pytest.raises(NodeSpecError, match="unknown node spec"):
        parse_node_spec(text)


def test_dry_clean_of_a_vm_or_a_local_node_says_what_it_would_do() -> None:
    """Neither touches anything: a VM's leftovers are the cache's, a local dry run names the enforcer's cleanup."""
    assert "cleaned above" in node_kind("vm").clean(parse_node_spec("vm"), dry_run=True)[0]
    assert "would run the enforcer's cleanup" in node_kind("local").clean(parse_node_spec("local"), dry_run=True)[0]


@dataclass(frozen=True)
class ToySpec(SpecOptions):
    """A new kind's parsed options, of its own record."""

    zone: str
    slots: int = 1


class ToyKind(NodeKind):
    """`toy://ZONE?slots=N`: a kind written the way README "Adding a node kind" says (record + KINDS line)."""

    scheme, usage, target, options = "toy", "toy://ZONE", "://", ("slots",)

    def parse(self, target: str | None, options: tuple[tuple[str, str], ...], shown: str) -> NodeSpec:
        slots = whole_number(dict(options), "slots", 1, 8, "", shown)
        return NodeSpec(self.scheme, options, own=ToySpec(target or "", slots or 1))

    def written(self, spec: NodeSpec) -> str:
        return f"toy://{ToySpec.of(spec).zone}"

    def short_name(self, spec: NodeSpec) -> str:
        return f"toy-{ToySpec.of(spec).zone}"

    def open(self, spec: NodeSpec, *, kubelet_config: KubeletConfig | None, profile: str | None) -> Node:
        raise NotImplementedError("never opened here")

    def clean(self, spec: NodeSpec, dry_run: bool) -> list[str]:
        return []

    def advice(self, requested: KubeletConfig) -> str:
        return "none"


TOY = ToyKind()


def test_a_new_kind_keeps_its_parsed_options_in_its_own_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind's target and options, parsed into its own frozen dataclass, ride on NodeSpec.own (no field of
    NodeSpec's for it) and come back typed by that class, through the spec's canonical text and equality."""
    monkeypatch.setitem(KINDS, "toy", f"{__name__}:TOY")  # its one line in spec.KINDS
    spec = parse_node_spec("toy://north?slots=3")
    assert ToySpec.of(spec) == ToySpec("north", 3)
    assert (spec.display, spec.name) == ("toy://north?slots=3", "toy-north")
    assert parse_node_spec(spec.display) == spec and spec != parse_node_spec("toy://south?slots=3")
    with pytest.raises(NodeSpecError, match="slots must be a whole number 1-8"):
        parse_node_spec("toy://north?slots=9")
    with pytest.raises(TypeError, match="toy spec 'toy://north\\?slots=3' carries no KindSpec"):
        KindSpec.of(spec)
