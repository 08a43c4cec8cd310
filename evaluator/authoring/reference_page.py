"""Turn a real page into the task's reference page: one index.html plus anonymised assets.

The result is exactly what a perfect submission for the task would be: a single HTML file
whose style sheets and scripts are inlined, whose images and videos are referenced as
``__PLACEHOLDER_ASSETS_BASE_DIR__/assetNNN.ext`` and whose fonts travel inside it. Authoring
records the task FROM this page (served the way the evaluator serves submissions), so the
reference page scores like the recording it produced.

Links to image and video files (``<a href="img/full/1.jpg">``, what a lightbox opens) are carried
like images. What is not carried over, with a warning: files outside the page's folder or origin,
external (internet) style sheets and scripts (they are removed: nothing would load them
offline), and URLs that scripts build at run time.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from evaluator.authoring.css import CssRewriter
from evaluator.authoring.html_scan import Tag, scan_tags
from evaluator.authoring.script import AuthoringError

PLACEHOLDER = "__PLACEHOLDER_ASSETS_BASE_DIR__"
IMAGE_EXTENSIONS = {"png", "jpg", "jpeg", "gif", "svg", "webp", "ico", "bmp", "avif"}
VIDEO_EXTENSIONS = {"mp4", "webm", "ogv", "mov"}
FONT_TYPES = {"woff2": "font/woff2", "woff": "font/woff", "ttf": "font/ttf", "otf": "font/otf"}
# Attributes holding one URL, per element, that can point at an image or a video.
URL_ATTRIBUTES = {
    "img": ("src",),
    "source": ("src",),
    "video": ("src", "poster"),
    "audio": ("src",),
    "input": ("src",),
    "image": ("href", "xlink:href"),
    "use": ("href", "xlink:href"),
    # A link to an image or a video file: what lightboxes open (a photo grid's full-size pictures). A link to
    # anything else (a page, a section) is not an asset and stays as written.
    "a": ("href",),
}
SRCSET_ELEMENTS = ("img", "source")
# Script attributes that mean nothing once the script is inline.
SCRIPT_SRC_ATTRIBUTES = {"src", "async", "defer", "integrity", "crossorigin", "charset"}
MAX_ASSETS = 400


@dataclass
class Asset:
    name: str  # anonymised file name, e.g. asset001.png
    url: str  # where the builder read it
    source: str  # the path inside the original folder (or origin): private
    data: bytes = field(repr=False)


@dataclass
class ReferencePage:
    html: str
    assets: list[Asset]
    warnings: list[str]

    def write(self, site_dir: Path, assets_dir: Path, asset_map_path: Path) -> None:
        """Write index.html, the asset files and the private map of asset names to sources."""
        site_dir.mkdir(parents=True, exist_ok=True)
        assets_dir.mkdir(parents=True, exist_ok=True)
        (site_dir / "index.html").write_text(self.html, encoding="utf-8")
        for asset in self.assets:
            (assets_dir / asset.name).write_bytes(asset.data)
        entries = [
            {"name": a.name, "source": a.source, "bytes": len(a.data), "sha256": hashlib.sha256(a.data).hexdigest()}
            for a in self.assets
        ]
        asset_map_path.parent.mkdir(parents=True, exist_ok=True)
        asset_map_path.write_text(json.dumps({"assets": entries, "warnings": self.warnings}, indent=2) + "\n")


def build_reference_page(source) -> ReferencePage:
    """Read the page from ``source`` (see evaluator.authoring.sources) and rewrite it."""
    data = source.read(source.page_url)
    if data is None:
        raise AuthoringError(f"cannot read the page {source.label}")
    builder = _Builder(source)
    html_text = builder.page(decode_text(data), source.page_url)
    return ReferencePage(html_text, builder.assets, builder.warnings)


def decode_text(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def extension_of(url: str) -> str:
    path = urlsplit(url).path
    return path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""


class _Builder:
    def __init__(self, source):
        self.source = source
        self.assets: list[Asset] = []
        self.by_url: dict[str, str] = {}
        self.fonts: dict[str, str] = {}
        self.warnings: list[str] = []
        self.css = CssRewriter(self.asset_ref, self.font_uri, self.read_text, self.warn)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def read_text(self, url: str) -> str | None:
        data = self.source.read(url)
        return None if data is None else decode_text(data)

    def asset_ref(self, url: str) -> str | None:
        """The placeholder reference for an image or video, collecting it on first use."""
        if extension_of(url) not in IMAGE_EXTENSIONS | VIDEO_EXTENSIONS:
            return None
        key, _, fragment = url.partition("#")
        if key not in self.by_url:
            data = self.source.read(key)
            if data is None:
                self.warn(f"asset not available offline, left as is: {key}")
                return None
            if len(self.assets) >= MAX_ASSETS:
                raise AuthoringError(f"the page uses more than {MAX_ASSETS} assets")
            name = f"asset{len(self.assets) + 1:03d}.{extension_of(key)}"
            self.assets.append(Asset(name, key, self.source.local_name(key), data))
            self.by_url[key] = name
        return f"{PLACEHOLDER}/{self.by_url[key]}" + (f"#{fragment}" if fragment else "")

    def font_uri(self, url: str) -> str | None:
        key = url.split("#")[0]
        mime = FONT_TYPES.get(extension_of(key))
        if mime is None:
            return None
        if key not in self.fonts:
            data = self.source.read(key)
            if data is None:
                self.warn(f"font not available offline: {key}")
                return None
            self.fonts[key] = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
        return self.fonts[key]

    def page(self, text: str, page_url: str) -> str:
        """Rewrite the document: each edit replaces one tag (or tag pair) span."""
        base = page_url
        edits: list[tuple[int, int, str]] = []
        for tag in scan_tags(text):
            if tag.name == "base" and tag.get("href"):
                base = urljoin(page_url, tag.get("href"))
                edits.append((tag.start, tag.end, ""))
            elif tag.name == "link":
                edits.append((tag.start, tag.end, self.link(tag, base)))
            elif tag.name == "script" and tag.get("src") is not None:
                end = tag.close_end if tag.close_end is not None else tag.end
                edits.append((tag.start, end, self.script(tag, base)))
            else:
                edits.extend(self.other(tag, text, base))
        return apply_edits(text, edits)

    def link(self, tag: Tag, base: str) -> str:
        rel = (tag.get("rel") or "").lower().split()
        url = urljoin(base, tag.get("href") or "")
        if "stylesheet" in rel and "alternate" not in rel:
            css = self.read_text(url)
            if css is None:
                self.warn(f"removed style sheet not available offline: {url}")
                return ""
            media = tag.get("media")
            media_attr = f' media="{media}"' if media and media.lower() != "all" else ""
            return f"<style{media_attr}>\n{self.css.sheet(css, url)}\n</style>"
        if "icon" in rel:
            ref = self.asset_ref(url)
            if ref:
                return tag.render([(k, ref if k == "href" else v) for k, v in tag.attrs])
        # Touch icons, preloads, manifests, preconnects: nothing a desktop page renders.
        return ""

    def script(self, tag: Tag, base: str) -> str:
        url = urljoin(base, tag.get("src") or "")
        code = self.read_text(url)
        if code is None:
            self.warn(f"removed script not available offline: {url}")
            return ""
        if tag.get("defer") is not None or (tag.get("type") or "").lower() == "module":
            self.warn(f"inlined a deferred or module script, which now runs in document order: {url}")
        attrs = [(k, v) for k, v in tag.attrs if k not in SCRIPT_SRC_ATTRIBUTES]
        opening = Tag("script", attrs, 0, 0, False).render(attrs)
        return f"{opening}{escape_script(code)}</script>"

    def other(self, tag: Tag, text: str, base: str) -> list[tuple[int, int, str]]:
        edits = []
        if tag.name == "style" and tag.close_start is not None:
            body = text[tag.end : tag.close_start]
            edits.append((tag.end, tag.close_start, self.css.sheet(body, base)))
        attrs = [(k, self.attribute(tag, k, v, base)) for k, v in tag.attrs]
        if attrs != tag.attrs:
            edits.insert(0, (tag.start, tag.end, tag.render(attrs)))
        return edits

    def attribute(self, tag: Tag, name: str, value: str | None, base: str) -> str | None:
        if value is None:
            return None
        if name == "style":
            return self.css.declarations(value, base)
        if name in URL_ATTRIBUTES.get(tag.name, ()) and not value.startswith(("data:", "#")):
            if tag.name == "input" and (tag.get("type") or "").lower() != "image":
                return value
            return self.asset_ref(urljoin(base, value.strip())) or value
        if name == "srcset" and tag.name in SRCSET_ELEMENTS:
            return self.srcset(value, base)
        return value

    def srcset(self, value: str, base: str) -> str:
        candidates = []
        for candidate in value.split(","):
            url, _, descriptor = candidate.strip().partition(" ")
            ref = self.asset_ref(urljoin(base, url)) if url and not url.startswith("data:") else None
            candidates.append(f"{ref or url} {descriptor}".strip())
        return ", ".join(candidates)


SCRIPT_CLOSE = re.compile(r"</(script)", re.I)


def escape_script(code: str) -> str:
    """Keep inlined code from closing its own <script> element early."""
    return SCRIPT_CLOSE.sub(r"<\\/\1", code).replace("<!--", "<\\!--")


def apply_edits(text: str, edits: list[tuple[int, int, str]]) -> str:
    out, position = [], 0
    for start, end, replacement in sorted(edits, key=lambda edit: edit[0]):
        if start < position:
            continue  # overlapping edit (malformed markup): keep the first
        out.append(text[position:start])
        out.append(replacement)
        position = end
    out.append(text[position:])
    return "".join(out)
