"""Rewrite a style sheet so it works inlined into one HTML file.

Imports are inlined (recursively), images and videos become anonymised assets behind the
submission placeholder, and web fonts become data: URIs. Fonts are not benchmark assets
(the official assets are images, icons and videos), but the reference page must still
look like the original, so it carries them itself. Of each ``@font-face`` source list
only the entry Chromium would pick is kept (the first one in a format it reads), which
keeps the page faithful without embedding four copies of every font.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urljoin

CSS_TOKEN = re.compile(
    r"""
    (?P<comment>/\*.*?\*/)
    |(?P<import>@import\s+(?:url\(\s*(?P<iq1>['"]?)(?P<iurl1>[^'")]*)(?P=iq1)\s*\)|(?P<iq2>['"])(?P<iurl2>.*?)(?P=iq2))
        \s*(?P<media>[^;]*);)
    |(?P<fontface>@font-face\s*\{[^}]*\})
    |(?P<url>url\(\s*(?P<q>['"]?)(?P<u>.*?)(?P=q)\s*\))
    |(?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
    """,
    re.S | re.X | re.I,
)
URL_IN_TEXT = re.compile(r"""url\(\s*(?P<q>['"]?)(?P<u>.*?)(?P=q)\s*\)""", re.S | re.I)
FONT_SRC = re.compile(r"(?P<prop>\bsrc\s*:)(?P<value>[^;}]*)(?P<end>;?)", re.I)
FORMAT_HINT = re.compile(r"""format\(\s*['"]?([\w-]+)""", re.I)
CHARSET_RULE = re.compile(r"""^\s*@charset\s+['"][^'"]*['"]\s*;""", re.I)
# Font formats Chromium reads, by format() hint and by file extension.
READABLE_FONT_FORMATS = {"woff2", "woff", "truetype", "opentype", "collection"}
READABLE_FONT_EXTENSIONS = {"woff2": "woff2", "woff": "woff", "ttf": "truetype", "otf": "opentype"}
MAX_IMPORT_DEPTH = 10


class CssRewriter:
    """Rewrites CSS text; the page builder supplies how URLs become assets and fonts.

    ``asset_ref(url) -> str | None`` returns the placeholder reference for an image or
    video (None when the URL is not one), ``font_uri(url) -> str | None`` a data: URI for
    a font, ``read_text(url) -> str | None`` an imported style sheet, and ``warn`` records
    what could not be carried over.
    """

    def __init__(
        self,
        asset_ref: Callable[[str], str | None],
        font_uri: Callable[[str], str | None],
        read_text: Callable[[str], str | None],
        warn: Callable[[str], None],
    ):
        self.asset_ref = asset_ref
        self.font_uri = font_uri
        self.read_text = read_text
        self.warn = warn

    def sheet(self, text: str, base_url: str, _stack: tuple[str, ...] = ()) -> str:
        """A whole style sheet found at ``base_url`` (or inline in a page at that URL)."""

        def replace(match: re.Match) -> str:
            if match.group("import"):
                return self._import(match, base_url, _stack)
            if match.group("fontface"):
                return self._font_face(match.group("fontface"), base_url)
            if match.group("url"):
                return self._url(match, base_url)
            return match.group(0)  # comments and strings stay as they are

        return CSS_TOKEN.sub(replace, text)

    def declarations(self, text: str, base_url: str) -> str:
        """A ``style`` attribute: only url() values can occur there."""
        return URL_IN_TEXT.sub(lambda match: self._url(match, base_url), text)

    def _url(self, match: re.Match, base_url: str) -> str:
        value = match.group("u").strip()
        if not value or value.startswith(("data:", "#", "about:", "blob:")):
            return match.group(0)
        url = urljoin(base_url, value)
        replacement = self.asset_ref(url) or self.font_uri(url)
        if replacement is None:
            self.warn(f"left as is in CSS (not a local image, video or font): {value}")
            return match.group(0)
        return f'url("{replacement}")'

    def _import(self, match: re.Match, base_url: str, stack: tuple[str, ...]) -> str:
        target = urljoin(base_url, (match.group("iurl1") or match.group("iurl2") or "").strip())
        if target in stack or len(stack) >= MAX_IMPORT_DEPTH:
            self.warn(f"dropped circular or too deep @import of {target}")
            return ""
        text = self.read_text(target)
        if text is None:
            self.warn(f"dropped @import of {target} (not available offline)")
            return ""
        inlined = self.sheet(CHARSET_RULE.sub("", text), target, (*stack, target))
        media = match.group("media").strip()
        return f"@media {media} {{\n{inlined}\n}}" if media else inlined

    def _font_face(self, block: str, base_url: str) -> str:
        def replace(match: re.Match) -> str:
            chosen = self._font_sources(match.group("value"), base_url)
            return f"{match.group('prop')} {chosen}{match.group('end')}" if chosen else ""

        return FONT_SRC.sub(replace, block)

    def _font_sources(self, value: str, base_url: str) -> str:
        """Keep local() entries and the first url() entry Chromium can read, as a data: URI."""
        kept = []
        candidates = chosen = False
        for entry in split_top_level(value):
            if entry.lower().startswith("local("):
                kept.append(entry)
                continue
            match = URL_IN_TEXT.search(entry)
            if chosen or not match or not self._readable_font(entry, match.group("u")):
                continue  # e.g. the .eot-only declaration old style sheets add for Internet Explorer
            candidates = True
            uri = self.font_uri(urljoin(base_url, match.group("u").strip()))
            if uri is None:
                continue
            kept.append(entry[: match.start()] + f'url("{uri}")' + entry[match.end() :])
            chosen = True
        if candidates and not chosen:
            self.warn(f"no font file of this @font-face could be read: {value.strip()[:120]}")
        return ", ".join(kept)

    @staticmethod
    def _readable_font(entry: str, url: str) -> bool:
        hint = FORMAT_HINT.search(entry)
        if hint:
            return hint.group(1).lower() in READABLE_FONT_FORMATS
        extension = url.split("#")[0].split("?")[0].rsplit(".", 1)[-1].lower()
        return extension in READABLE_FONT_EXTENSIONS


def split_top_level(value: str) -> list[str]:
    """Split a comma-separated CSS value, ignoring commas inside parentheses and quotes."""
    parts, depth, quote, current = [], 0, "", []
    for char in value:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    parts.append("".join(current).strip())
    return [part for part in parts if part]
