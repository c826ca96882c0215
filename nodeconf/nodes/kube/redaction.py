"""Credentials out of any text that can reach a message, a log or a report: a URL's userinfo, Authorization
header values and bearer tokens, secret-named arguments and fields.

Sources: RFC 3986 §3.2.1 (userinfo `user:password@` before the host; ':' and '@' are encoded inside it), RFC 7235
§4.2 (the Authorization and Proxy-Authorization credentials), RFC 6750 §2.1 (`Bearer <token>`).
"""

from __future__ import annotations

import re

MASK = "***"
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^\s/?#@:]*)(?P<password>:[^\s/?#@]*)?@")
_AUTHORIZATION = re.compile(r"(?i)(\b(?:proxy-)?authorization['\"]?\s*[:=]\s*['\"]?)(?:[A-Za-z-]+\s+)?[^\s'\",;}]+")
_BEARER = re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]+")
_FLAG = re.compile(r"(?i)(--(?:token|password|passwd|secret|api-key|[a-z-]*-key-data)(?:=|\s+))[^\s'\"`]+")
_FIELD = re.compile(r"(?i)(\b(?:token|password|passwd|secret|api[-_]?key)['\"]?\s*[:=]\s*['\"]?)[^\s'\"`,;&}]+")


def _userinfo(match: re.Match[str]) -> str:
    if match["password"] is None:
        return f"{match['scheme']}{MASK}@"
    return f"{match['scheme']}{match['user']}:{MASK}@"


def redacted(text: str) -> str:
    """The text with every credential it carries replaced by `***` (`user:***@host`, `Bearer ***`)."""
    text = _USERINFO.sub(_userinfo, text)
    text = _AUTHORIZATION.sub(rf"\1{MASK}", text)
    text = _BEARER.sub(rf"\1{MASK}", text)
    text = _FLAG.sub(rf"\1{MASK}", text)
    return _FIELD.sub(rf"\1{MASK}", text)
