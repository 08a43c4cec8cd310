"""Draw the stitched asset sheets: every asset as a thumbnail labelled with its file name.

Models see assets only through these sheets, as in the official benchmark, and refer to
an asset by the name printed under it. Images Pillow cannot open itself are handed to a
``rasterize`` callable (authoring renders SVG with the same Chromium that records the
task); a video shows its first frame.
"""

from __future__ import annotations

import io
import subprocess
from collections.abc import Callable
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont, UnidentifiedImageError

CELL = 256  # square thumbnail area per asset
LABEL_HEIGHT = 32
COLUMNS = 4
ROWS = 4
MAX_UPSCALE = 4  # small icons are enlarged, but not into blurry blobs
BACKGROUND = (255, 255, 255)
CELL_BACKGROUND = (238, 238, 238)
BORDER = (190, 190, 190)
LABEL_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
VIDEO_EXTENSIONS = {".mp4", ".webm", ".ogv", ".mov"}

Rasterizer = Callable[[Path, int], Image.Image | None]


def stitch_assets(assets_dir: Path, out_dir: Path, rasterize: Rasterizer | None = None) -> list[Path]:
    """Write stitched_image_1.png, ... (16 assets per sheet); returns the written paths."""
    assets = sorted(p for p in assets_dir.iterdir() if p.is_file()) if assets_dir.is_dir() else []
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("stitched_image*.png"):
        old.unlink()
    per_sheet = COLUMNS * ROWS
    written = []
    for number, first in enumerate(range(0, len(assets), per_sheet), start=1):
        sheet = draw_sheet(assets[first : first + per_sheet], rasterize)
        path = out_dir / f"stitched_image_{number}.png"
        sheet.save(path, format="PNG", optimize=True)
        written.append(path)
    return written


def draw_sheet(assets: list[Path], rasterize: Rasterizer | None) -> Image.Image:
    columns = min(COLUMNS, len(assets))
    rows = -(-len(assets) // COLUMNS)
    sheet = Image.new("RGB", (columns * CELL, rows * (CELL + LABEL_HEIGHT)), BACKGROUND)
    draw = ImageDraw.Draw(sheet)
    font = label_font()
    for index, path in enumerate(assets):
        left, top = (index % COLUMNS) * CELL, (index // COLUMNS) * (CELL + LABEL_HEIGHT)
        draw.rectangle([left, top, left + CELL - 1, top + CELL - 1], fill=CELL_BACKGROUND, outline=BORDER)
        thumb = thumbnail(path, rasterize)
        if thumb is not None:
            x = left + (CELL - thumb.width) // 2
            y = top + (CELL - thumb.height) // 2
            sheet.paste(thumb, (x, y), thumb)
        else:
            draw.text((left + CELL // 2, top + CELL // 2), "(no preview)", fill=(90, 90, 90), font=font, anchor="mm")
        draw.text((left + CELL // 2, top + CELL + LABEL_HEIGHT // 2), path.name, fill=(0, 0, 0), font=font, anchor="mm")
    return sheet


def thumbnail(path: Path, rasterize: Rasterizer | None) -> Image.Image | None:
    """The asset scaled to fit the cell (RGBA), or None when it cannot be drawn."""
    image = open_image(path, rasterize)
    if image is None or image.width == 0 or image.height == 0:
        return None
    limit = CELL - 8
    scale = min(limit / image.width, limit / image.height, MAX_UPSCALE)
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    return image.convert("RGBA").resize(size, Image.Resampling.LANCZOS)


def open_image(path: Path, rasterize: Rasterizer | None) -> Image.Image | None:
    suffix = path.suffix.lower()
    if suffix in VIDEO_EXTENSIONS:
        return first_video_frame(path)
    if suffix == ".svg":
        return rasterize(path, CELL - 8) if rasterize else None
    try:
        with Image.open(path) as image:
            image.seek(0)  # first frame of an animation
            return image.convert("RGBA")
    except (UnidentifiedImageError, OSError, ValueError):
        return rasterize(path, CELL - 8) if rasterize else None


def first_video_frame(path: Path) -> Image.Image | None:
    command = ["ffmpeg", "-v", "error", "-i", str(path), "-frames:v", "1", "-f", "image2pipe", "-vcodec", "png", "-"]
    try:
        result = subprocess.run(command, capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0 or not result.stdout:
        return None
    return Image.open(io.BytesIO(result.stdout)).convert("RGBA")


def label_font() -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.truetype(LABEL_FONT, 16)
    except OSError:
        return ImageFont.load_default(16)
