"""The documents the oracle's and the suites' rules cite by name, as a reader finds them (the report's References
list each in full: nodeconf/report/citations.py)."""

from __future__ import annotations

ARTICLE = 'article "How do requests, limits and QoS work?"'
POST = "Memory QoS v1.36 post"
