"""A protobuf (proto3) wire codec for the few CRI messages the enforcer sends and reads, driven by a schema.

Source: protobuf "Encoding" (varints, ZigZag-free int32/int64 as 64-bit two's complement, tags = number << 3 |
wire type, length-delimited strings/bytes/messages, packed repeated scalars, map<K,V> = repeated entry {1: key,
2: value}, proto3 omits default scalars, unknown fields are skipped).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
SCALARS = ("int32", "int64", "uint32", "uint64", "bool", "enum", "string", "bytes")
_VARINT_KINDS = ("int32", "int64", "uint32", "uint64", "bool", "enum")
_MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class Field:
    """One field: its number, kind (a scalar, "message" or "map" of string to string), schema of a message."""

    number: int
    kind: str
    message: Mapping[str, Field] | None = None
    repeated: bool = False


Schema = Mapping[str, Field]


class DecodeError(ValueError):
    """Bytes that are not a valid encoding of the message."""


def varint(value: int) -> bytes:
    """An unsigned varint; a negative value as its 64-bit two's complement (10 bytes), as int32/int64 go."""
    value &= _MASK64
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _tag(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def _scalar(kind: str, value: Any) -> tuple[int, bytes]:
    if kind in ("string", "bytes"):
        raw = value.encode() if kind == "string" else bytes(value)
        return LENGTH, varint(len(raw)) + raw
    if kind in _VARINT_KINDS:
        if kind.startswith("uint") and value < 0:
            raise ValueError(f"{kind} cannot hold {value}")
        return VARINT, varint(int(value))
    raise ValueError(f"unknown scalar kind {kind!r}")


def encode(schema: Schema, value: Mapping[str, Any]) -> bytes:
    """The message's bytes; proto3 default scalars (0, "", False) are left out, set messages always written."""
    out = bytearray()
    for name, item in value.items():
        field = schema.get(name)
        if field is None:
            raise ValueError(f"no field {name!r} in this message")
        if field.kind == "map":
            for key, val in item.items():
                entry = encode(_MAP_ENTRY, {"key": key, "value": val})
                out += _tag(field.number, LENGTH) + varint(len(entry)) + entry
            continue
        for element in (item if field.repeated else [item]):
            if field.kind == "message":
                assert field.message is not None
                body = encode(field.message, element)
                out += _tag(field.number, LENGTH) + varint(len(body)) + body
            elif field.repeated or element:
                wire, body = _scalar(field.kind, element)
                out += _tag(field.number, wire) + body
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise DecodeError("truncated or overlong varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result & _MASK64, pos


def fields(data: bytes) -> list[tuple[int, int, int | bytes]]:
    """Every (number, wire type, value) in order: varints and fixed ints as int, length-delimited as bytes."""
    out: list[tuple[int, int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == VARINT:
            value, pos = _read_varint(data, pos)
        elif wire in (FIXED64, FIXED32):
            size = 8 if wire == FIXED64 else 4
            if pos + size > len(data):
                raise DecodeError("truncated fixed-width field")
            value, pos = int.from_bytes(data[pos:pos + size], "little"), pos + size
        elif wire == LENGTH:
            size, pos = _read_varint(data, pos)
            if pos + size > len(data):
                raise DecodeError("truncated length-delimited field")
            value, pos = data[pos:pos + size], pos + size
        else:
            raise DecodeError(f"unsupported wire type {wire} (field {number})")
        if number == 0:
            raise DecodeError("field number 0")
        out.append((number, wire, value))
    return out


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _convert(kind: str, value: int | bytes) -> Any:
    if kind == "string":
        if not isinstance(value, bytes):
            raise DecodeError("a string field with a numeric wire type")
        return value.decode()
    if kind == "bytes":
        if not isinstance(value, bytes):
            raise DecodeError("a bytes field with a numeric wire type")
        return value
    if not isinstance(value, int):
        raise DecodeError(f"a {kind} field with a length-delimited wire type")
    if kind == "bool":
        return value != 0
    if kind in ("int64",):
        return _signed(value, 64)
    if kind in ("int32", "enum"):
        return _signed(value, 32)
    if kind == "uint32":
        return value & 0xFFFFFFFF
    return value


def _packed(kind: str, data: bytes) -> list[int]:
    out, pos = [], 0
    while pos < len(data):
        value, pos = _read_varint(data, pos)
        out.append(_convert(kind, value))
    return out


def decode(schema: Schema, data: bytes) -> dict[str, Any]:
    """The fields of the schema that the bytes hold (absent ones left out; repeated → list, map → dict); fields
    the schema does not name are skipped, as proto3 parsers do with unknown fields."""
    by_number = {f.number: (name, f) for name, f in schema.items()}
    out: dict[str, Any] = {}
    for number, _wire, value in fields(data):
        if number not in by_number:
            continue
        name, field = by_number[number]
        if field.kind == "map":
            if not isinstance(value, bytes):
                raise DecodeError(f"map field {name} with a numeric wire type")
            entry = decode(_MAP_ENTRY, value)
            out.setdefault(name, {})[entry.get("key", "")] = entry.get("value", "")
        elif field.kind == "message":
            if not isinstance(value, bytes):
                raise DecodeError(f"message field {name} with a numeric wire type")
            assert field.message is not None
            item = decode(field.message, value)
            if field.repeated:
                out.setdefault(name, []).append(item)
            else:
                out[name] = item
        elif field.repeated and isinstance(value, bytes) and field.kind in _VARINT_KINDS:
            out.setdefault(name, []).extend(_packed(field.kind, value))
        elif field.repeated:
            out.setdefault(name, []).append(_convert(field.kind, value))
        else:
            out[name] = _convert(field.kind, value)  # the last one wins (protobuf "last one wins")
    return out


_MAP_ENTRY: Schema = {"key": Field(1, "string"), "value": Field(2, "string")}
