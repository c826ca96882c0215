"""Java-style `.properties` files (Allure's environment.properties): write, read back, flatten facts.

Source: java.util.Properties.load/store escaping rules, restricted to what `write_properties` emits.
"""

from collections.abc import Iterable, Mapping
from pathlib import Path

from nodeconf.report.allure_json import ReportError, read_bounded, shown

MAX_PROPERTIES_BYTES = 1024 * 1024

_VALUE_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_KEY_ESCAPES = {**_VALUE_ESCAPES, " ": "\\ ", "=": "\\=", ":": "\\:", "#": "\\#", "!": "\\!"}
_UNESCAPES = {"n": "\n", "r": "\r", "t": "\t"}


def _escape(text: str, table: Mapping[str, str]) -> str:
    return "".join(table.get(char, char) for char in text)


def _unescape(text: str) -> str:
    out: list[str] = []
    chars = iter(text)
    for char in chars:
        if char == "\\":
            escaped = next(chars, "")
            out.append(_UNESCAPES.get(escaped, escaped))
        else:
            out.append(char)
    return "".join(out)


def _split_entry(line: str) -> tuple[str, str]:
    index = 0
    while index < len(line):
        if line[index] == "\\":
            index += 2
            continue
        if line[index] in "=:":
            return line[:index], line[index + 1 :]
        index += 1
    return line, ""


def format_properties(entries: Iterable[tuple[str, str]]) -> str:
    """Render key/value pairs as `key=value` lines with keys and values escaped."""
    return "".join(f"{_escape(key, _KEY_ESCAPES)}={_escape(value, _VALUE_ESCAPES)}\n" for key, value in entries)


def parse_properties(text: str) -> list[tuple[str, str]]:
    """Parse `key=value` / `key: value` lines, skipping blank lines and `#`/`!` comments."""
    entries: list[tuple[str, str]] = []
    for raw in text.splitlines():
        line = raw.lstrip()
        if not line or line[0] in "#!":
            continue
        key, value = _split_entry(line)
        entries.append((_unescape(key.rstrip()), _unescape(value.lstrip())))
    return entries


def write_properties(path: Path, entries: Iterable[tuple[str, str]]) -> None:
    """Write `entries` to `path` as a UTF-8 properties file."""
    path.write_text(format_properties(entries), encoding="utf-8")


def read_properties(path: Path) -> list[tuple[str, str]]:
    """Read a properties file (UTF-8, bounded, inside its directory); a missing file has no entries."""
    if not path.is_file() and not path.is_symlink():
        return []
    data = read_bounded(path, MAX_PROPERTIES_BYTES, path.parent)
    try:
        return parse_properties(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ReportError(f"{shown(path)}: not UTF-8 (byte {error.start})") from None


def _scalar(value: object) -> str:
    if isinstance(value, tuple) and len(value) == 2:  # a (name, value) pair: `name=value`, never a Python tuple
        return f"{_scalar(value[0])}={_scalar(value[1])}"
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def flatten_facts(facts: Mapping[str, object], prefix: str = "") -> list[tuple[str, str]]:
    """Flatten nested facts into dotted keys; sequences become comma-separated values, pairs `name=value`."""
    entries: list[tuple[str, str]] = []
    for key, value in facts.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            entries.extend(flatten_facts(value, f"{name}."))
        elif isinstance(value, list | tuple | set | frozenset):
            entries.append((name, ", ".join(_scalar(item) for item in value)))
        else:
            entries.append((name, _scalar(value)))
    return entries
