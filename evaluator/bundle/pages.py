"""Pages: decoding their bytes, and the official post-processing before one is served.

Page decoding choice: pages are read as UTF-8 (a UTF-8 or UTF-16 byte-order mark is
honoured). Bytes that are not valid UTF-8 become U+FFFD and the bundle gets a warning
naming the task: this is what a browser does with a page served as UTF-8, it keeps every
valid character intact (a Latin-1 fallback would garble all of them), and one stray
byte should not cost a model a whole task.
"""

from __future__ import annotations

import re
from pathlib import Path

ASSET_PLACEHOLDER = "__PLACEHOLDER_ASSETS_BASE_DIR__"
ASSETS_URL_PREFIX = "/__assets__"

_FENCE_OPEN = re.compile(r"```[ \t]*html\b[ \t]*\n?", re.IGNORECASE)
_FENCE_CLOSE_LINE = re.compile(r"^[ \t]*```", re.MULTILINE)
_DOCUMENT_START = re.compile(r"<(?:!doctype|html|head|body)\b", re.IGNORECASE)
_TAG_REST = r"""(?:(?:[^>"']|"[^"]*"|'[^']*')*>|[^>]*>?)"""
_IFRAME_OPEN = re.compile(r"<iframe(?=[\s/>]|$)" + _TAG_REST, re.IGNORECASE)
_IFRAME_TOKEN = re.compile(
    r"(?P<open><iframe(?=[\s/>]|$)" + _TAG_REST + r")|(?P<close></iframe(?=[\s/>]|$)[^>]*>?)", re.IGNORECASE
)
_IFRAME_ANY = re.compile(r"</?iframe", re.IGNORECASE)  # in every token _IFRAME_TOKEN matches
_PLACEHOLDER = re.compile(r"(?:\.?/)?" + re.escape(ASSET_PLACEHOLDER) + r"(/*)(?=([\w%.~-])?)")


def prepare_html(text: str) -> str:
    """Official post-processing of a page before it is served.

    Takes the first ```html fenced block when the text is a raw model answer, strips every
    iframe, and points the asset placeholder at ASSETS_URL_PREFIX.
    """
    return replace_placeholder(strip_iframes(extract_answer_html(text)))


def decode_page(data: bytes) -> tuple[str, str | None]:
    """Page bytes -> (text, warning or None); see the module docstring for the choice made."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16"), None
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        warning = (
            f"is not valid UTF-8 (first bad byte at offset {exc.start}); undecodable bytes were replaced by U+FFFD"
        )
        return data.decode("utf-8", "replace"), warning


def read_page(path: Path) -> str:
    """The page at ``path`` decoded and post-processed, ready to serve."""
    return prepare_html(decode_page(Path(path).read_bytes())[0])


def task_sort_key(key: str) -> tuple:
    """Numeric task keys in number order, then the others alphabetically."""
    return (0, int(key), "") if key.isdigit() else (1, 0, key)


def extract_answer_html(text: str) -> str:
    """The first ```html block when ``text`` is a raw model answer, else ``text`` unchanged.

    A text counts as a raw answer when the fence comes before any HTML document start, so
    a real page that merely shows a markdown sample somewhere is left alone. An answer cut
    off before its closing fence keeps everything after the opening one.
    """
    opening = _FENCE_OPEN.search(text)
    if not opening or _DOCUMENT_START.search(text, 0, opening.start()):
        return text
    body = text[opening.end():]
    closing = _FENCE_CLOSE_LINE.search(body)
    end = closing.start() if closing else body.find("```")
    return (body if end < 0 else body[:end]).strip()


def strip_iframes(html: str) -> str:
    """Remove every iframe: ``<iframe ...>...</iframe>`` blocks, unclosed or self-closing tags, stray ends.

    Like a browser, everything up to the next ``</iframe>`` belongs to the iframe (``/>``
    does not close it). An iframe never closed loses only its tag. One linear pass.
    """
    if not _IFRAME_ANY.search(html):  # most pages: a quick scan instead of the token pass (30 ms on 850 kB)
        return html
    out: list[str] = []
    pos = 0
    open_match = None
    for token in _IFRAME_TOKEN.finditer(html):
        if token.group("open") and open_match is None:
            out.append(html[pos:token.start()])
            open_match = token
        elif token.group("close") and open_match is not None:
            pos, open_match = token.end(), None
        elif token.group("close"):
            out.append(html[pos:token.start()])
            pos = token.end()
    if open_match is not None:
        out.append(_IFRAME_OPEN.sub("", html[open_match.end():]))
    else:
        out.append(html[pos:])
    return "".join(out)


def replace_placeholder(html: str) -> str:
    """``__PLACEHOLDER_ASSETS_BASE_DIR__/asset001.png`` -> ``/__assets__/asset001.png``.

    Also mends the usual slips: a missing or doubled slash after the placeholder, and a
    ``/`` or ``./`` before it (which would otherwise make a ``//host`` URL).
    """

    # The pattern's optional prefix keeps re from scanning for the placeholder itself (40 ms on an
    # 850 kB page): find each occurrence, then match where re.sub would, up to two characters before.
    out: list[str] = []
    pos = 0
    found = html.find(ASSET_PLACEHOLDER)
    while found >= 0:
        starts = range(max(pos, found - 2), found + 1)  # at ``found`` itself it always matches
        match = next(m for m in (_PLACEHOLDER.match(html, start) for start in starts) if m)
        slash = "/" if match.group(1) or match.group(2) else ""
        out += [html[pos:match.start()], ASSETS_URL_PREFIX + slash]
        pos = match.end()
        found = html.find(ASSET_PLACEHOLDER, pos)
    out.append(html[pos:])
    return "".join(out)
