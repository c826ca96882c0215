"""Names of documents nodeconf does not ship: a citation that holds one names what no reader can open."""

from __future__ import annotations

import re

UNSHIPPED = re.compile(r"SEMANTICS|RUNTIME-FACTS|MEASURED\.md|DESIGN\.md|STYLE\.md|\bseeds?\b")
