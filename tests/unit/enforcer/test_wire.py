"""The agent's protocol: both sides speak the operations and envelopes of nodeconf/enforcer/wire.py."""

from __future__ import annotations

import pytest

from nodeconf.enforcer.server import OPERATIONS
from nodeconf.enforcer.wire import (
    ARGUMENTS,
    Op,
    Reply,
    WireError,
    decode_reply,
    decode_request,
    encode_reply,
    encode_request,
    facts_from_dict,
    facts_to_dict,
)
from nodeconf.node_facts import NodeFacts


def test_every_operation_has_its_arguments_and_a_handler() -> None:
    assert set(ARGUMENTS) == set(Op)
    assert set(OPERATIONS) | {Op.SHUTDOWN} == set(Op)


def test_a_request_round_trips() -> None:
    request = decode_request(encode_request(3, Op.EVIDENCE, {"pod": "default/p", "files": ["memory.stat"]}))
    assert (request.ident, request.op, request.args["files"]) == (3, "evidence", ["memory.stat"])


def test_an_argument_the_operation_does_not_take_is_a_driver_bug() -> None:
    with pytest.raises(ValueError, match=r"op 'status' takes no \['files'\]"):
        encode_request(1, Op.STATUS, {"pod": "default/p", "files": []})


@pytest.mark.parametrize(("line", "message"), [
    pytest.param(b"{not json", "request is not JSON", id="not-json"),
    pytest.param(b"[1]", "request must be a JSON object", id="not-an-object"),
])
def test_a_bad_request_line_is_refused(line: bytes, message: str) -> None:
    with pytest.raises(WireError, match=message):
        decode_request(line)


@pytest.mark.parametrize("reply", [
    pytest.param(Reply(4, True, {"rc": 0}, agent_ms=1.5), id="ok"),
    pytest.param(Reply(5, False, error="no pod default/ghost"), id="error"),
])
def test_a_reply_round_trips(reply: Reply) -> None:
    assert decode_reply(encode_reply(reply)) == reply


def test_facts_round_trip() -> None:
    facts = NodeFacts(memory_capacity=2 << 30, swap_capacity=1 << 30, cpu_capacity_milli=2000, page_size=4096,
                      kernel_version="6.1.0", cgroup_controllers=("cpu", "memory"), cpu_weight_formula="linear")
    assert facts_from_dict(facts_to_dict(facts)) == facts
