"""The index page's description: README.md with its relative links made absolute.

A relative link (`docs/receiver.md`) works in a checkout and on GitHub, but an index page has no
files beside it: there each one points into the repository that [project.urls] names.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hatchling.metadata.plugin.interface import MetadataHookInterface

# `](target)` where target has no scheme (`https:`) and is not an anchor of the page itself.
_RELATIVE_LINK = re.compile(r"\]\((?![A-Za-z][A-Za-z0-9+.-]*:|#)([^)\s]+)\)")


def absolute_links(text: str, repository: str) -> str:
    """text with each relative Markdown link pointing at that file on the main branch."""
    return _RELATIVE_LINK.sub(lambda m: f"]({repository}/blob/main/{m.group(1)})", text)


class ReadmeHook(MetadataHookInterface):
    def update(self, metadata: dict[str, Any]) -> None:
        text = Path(self.root, "README.md").read_text(encoding="utf-8")
        repository = metadata["urls"]["Repository"]
        metadata["readme"] = {"content-type": "text/markdown", "text": absolute_links(text, repository)}
