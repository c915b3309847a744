"""MkDocs hooks of the documentation site (``mkdocs.yml``: ``hooks``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:  # the `mkdocs` script's path holds its own folder, not the project's
    sys.path.insert(0, str(_ROOT))

from tools.docs_figures import FigureError, render  # noqa: E402

# A docstring's cross-reference role as the API page renders it (":class:<code>~harness.x.Name</code>"):
# the code kept, the role and a leading "~module." (the name alone, as the role would show it) dropped.
_ROLE = re.compile(r":(?:class|func|data|mod|meth|attr|exc|obj):<code>(~(?:[\w]+\.)*)?([^<]*)</code>")


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Each figure placeholder filled from the benchmark's file (``tools/docs_figures.py``); a missing one
    stops the build."""
    try:
        return render(markdown, f"docs/{page.file.src_uri}", _ROOT)
    except FigureError as error:
        raise PluginError(str(error)) from None


def on_page_content(html: str, **_: Any) -> str:
    return _ROLE.sub(lambda m: f"<code>{m.group(2)}</code>", html)
