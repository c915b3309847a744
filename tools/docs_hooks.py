"""MkDocs hooks of the documentation site (``mkdocs.yml``: ``hooks``)."""

from __future__ import annotations

import re
from typing import Any

# A docstring's cross-reference role as the API page renders it (":class:<code>~harness.x.Name</code>"):
# the code kept, the role and a leading "~module." (the name alone, as the role would show it) dropped.
_ROLE = re.compile(r":(?:class|func|data|mod|meth|attr|exc|obj):<code>(~(?:[\w]+\.)*)?([^<]*)</code>")


def on_page_content(html: str, **_: Any) -> str:
    return _ROLE.sub(lambda m: f"<code>{m.group(2)}</code>", html)
