"""Reading Allure's files defensively: bounded reads of regular files inside the results directory, one-line
errors naming the file, typed access to loose fields.

Source: issue 11 (deep JSON, huge integers, oversized files, links out of the directory must not crash or leak).
"""

import json
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

MAX_JSON_BYTES = 16 * 1024 * 1024
MAX_JSON_DEPTH = 64
INT64_MAX = 2**63 - 1


class ReportError(Exception):
    """A results directory or report output that cannot be used; the message is one line."""


def shown(path: Path) -> str:
    """A path as one printable line (control characters in file names escaped)."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in str(path))


def is_inside(root: Path, path: Path) -> bool:
    """True when `path`, with every symbolic link followed, stays inside `root`."""
    try:
        return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root))
    except (OSError, ValueError):
        return False


def read_bounded(path: Path, limit: int, root: Path | None = None) -> bytes:
    """At most `limit` bytes of the regular file `path` (inside `root` when given); ReportError otherwise."""
    if root is not None and not is_inside(root, path):
        raise ReportError(f"{shown(path)}: a symbolic link out of the results directory (not read)")
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ReportError(f"{shown(path)}: not a regular file")
        if info.st_size > limit:
            raise ReportError(f"{shown(path)}: {info.st_size} bytes, larger than the {limit} bytes allowed")
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as error:
        raise ReportError(f"{shown(path)}: unreadable ({error.strerror or type(error).__name__})") from None
    if len(data) > limit:
        raise ReportError(f"{shown(path)}: larger than the {limit} bytes allowed")
    return data


def _depth(value: object) -> int:
    """How deeply JSON arrays and objects nest in `value` (iterative: no recursion limit)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        current, level = pending.pop()
        children: Sequence[object] = (
            list(current.values()) if isinstance(current, dict) else current if isinstance(current, list) else ()
        )
        if children or isinstance(current, dict | list):
            deepest = max(deepest, level)
            pending.extend((child, level + 1) for child in children)
    return deepest


def load_json(path: Path, root: Path | None = None) -> dict[str, object]:
    """The JSON object in `path`; ReportError naming the file if it is unreadable, too big, too deep or no object."""
    data = read_bounded(path, MAX_JSON_BYTES, root if root is not None else path.parent)
    try:
        value = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ReportError(f"{shown(path)}: unreadable Allure result (not UTF-8)") from None
    except json.JSONDecodeError as error:
        raise ReportError(f"{shown(path)}: unreadable Allure result ({error.msg} at line {error.lineno})") from None
    except ValueError:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise ReportError(f"{shown(path)}: unreadable Allure result (a number with too many digits)") from None
    except RecursionError:
        raise ReportError(f"{shown(path)}: unreadable Allure result (nested too deeply)") from None
    if not isinstance(value, dict):
        raise ReportError(f"{shown(path)}: unreadable Allure result (not a JSON object)")
    if _depth(value) > MAX_JSON_DEPTH:
        raise ReportError(f"{shown(path)}: unreadable Allure result (nested deeper than {MAX_JSON_DEPTH} levels)")
    return value


def mapping(value: object) -> Mapping[str, object]:
    """`value` if it is a JSON object, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def sequence(value: object) -> Sequence[object]:
    """`value` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def text(value: object) -> str:
    """`value` if it is a JSON string (lone surrogates, which no UTF-8 output can carry, as "?"), else ""."""
    if not isinstance(value, str):
        return ""
    return value if value.isascii() else value.encode("utf-8", "replace").decode("utf-8")


def millis(value: object) -> int | None:
    """A timestamp or duration in milliseconds if it is a JSON integer in 0..int64, else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT64_MAX else None
