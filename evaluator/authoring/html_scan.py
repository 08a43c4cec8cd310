"""Find the tags of an HTML document with their exact character spans.

The page builder rewrites only the tags that reference other files and leaves every
other byte of the document alone, so it needs to know where each tag starts and ends.
The standard library's HTMLParser finds tags the way browsers do (script and style
bodies are raw text); this wrapper turns its line/column positions into offsets.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from html.parser import HTMLParser

# Elements whose closing tag the builder needs (their bodies are replaced or rewritten).
PAIRED = ("script", "style")


@dataclass
class Tag:
    name: str
    attrs: list[tuple[str, str | None]]
    start: int
    end: int
    self_closing: bool
    close_start: int | None = None  # for script/style: the span of the closing tag
    close_end: int | None = None

    def get(self, name: str) -> str | None:
        for key, value in self.attrs:
            if key == name:
                return value
        return None

    def render(self, attrs: list[tuple[str, str | None]]) -> str:
        """This start tag written out with ``attrs`` (values escaped, boolean attributes bare)."""
        parts = [f"<{self.name}"]
        for key, value in attrs:
            parts.append(f" {key}" if value is None else f' {key}="{html.escape(value, quote=True)}"')
        parts.append(" />" if self.self_closing else ">")
        return "".join(parts)


class _Scanner(HTMLParser):
    def __init__(self, text: str):
        super().__init__(convert_charrefs=False)
        self.text = text
        self.line_starts = [0] + [i + 1 for i, char in enumerate(text) if char == "\n"]
        self.tags: list[Tag] = []
        self.open: dict[str, Tag] = {}

    def _offset(self) -> int:
        line, column = self.getpos()
        return self.line_starts[line - 1] + column

    def handle_starttag(self, tag, attrs):
        self._add(tag, attrs, self_closing=False)

    def handle_startendtag(self, tag, attrs):
        self._add(tag, attrs, self_closing=True)

    def _add(self, tag, attrs, self_closing):
        start = self._offset()
        raw = self.get_starttag_text() or ""
        item = Tag(tag, list(attrs), start, start + len(raw), self_closing)
        self.tags.append(item)
        if tag in PAIRED and not self_closing:
            self.open[tag] = item

    def handle_endtag(self, tag):
        item = self.open.pop(tag, None)
        if item is None:
            return
        start = self._offset()
        end = self.text.find(">", start)
        item.close_start, item.close_end = start, (end + 1 if end >= 0 else len(self.text))


def scan_tags(text: str) -> list[Tag]:
    """Every start tag in document order; script/style tags also carry their closing span."""
    scanner = _Scanner(text)
    scanner.feed(text)
    scanner.close()
    return scanner.tags

