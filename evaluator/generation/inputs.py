"""What the model is sent for one task: the stitched asset images, sampled video frames, and the prompt."""

from __future__ import annotations

import base64
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from evaluator.generation.config import DETAIL_CHARS, FRAME_RATE, TEMPERATURE, EndpointConfig, TaskFailed

FFMPEG_TIMEOUT_S = 300
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp",
               ".gif": "image/gif"}


def stitched_images(task) -> list[Path]:
    """The task's stitched asset images in natural order (stitched_image_2 before stitched_image_10)."""
    folder = Path(task.stitched_dir)
    if not folder.is_dir():
        return []
    images = [path for path in folder.iterdir() if path.suffix.lower() in IMAGE_TYPES and path.is_file()]
    return sorted(images, key=lambda path: natural_key(path.name))


def natural_key(text: str) -> list:
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", text)]


def sample_frames(video: Path, dest: Path, fps: float = FRAME_RATE) -> list[Path]:
    """Every frame of ``video`` at ``fps`` as JPEG files in ``dest``, in time order; raises TaskFailed."""
    if not Path(video).is_file():
        raise TaskFailed("the task has no video.mp4 to sample frames from")
    dest.mkdir(parents=True, exist_ok=True)
    command = ["ffmpeg", "-nostdin", "-loglevel", "error", "-i", str(video), "-vf", f"fps={fps}",
               "-q:v", "3", str(dest / "frame_%05d.jpg")]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=FFMPEG_TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise TaskFailed("ffmpeg is not installed on the generating machine") from None
    except subprocess.TimeoutExpired:
        raise TaskFailed(f"sampling the video took longer than {FFMPEG_TIMEOUT_S} s") from None
    frames = sorted(dest.glob("frame_*.jpg"))
    if done.returncode != 0 or not frames:
        last = (done.stderr.strip().splitlines() or ["no frame decoded"])[-1]
        last = last.replace(str(video), Path(video).name)  # server paths are nobody's business
        raise TaskFailed(f"the task's video could not be read ({last[:DETAIL_CHARS]})")
    return frames


def pick_evenly(items: list, count: int) -> list:
    """``count`` items spread evenly over ``items`` (first and last kept), in their order."""
    if count <= 0:
        return []
    if len(items) <= count:
        return list(items)
    if count == 1:
        return [items[0]]
    step = (len(items) - 1) / (count - 1)
    return [items[round(n * step)] for n in range(count)]


@dataclass
class ModelInputs:
    stitched: list[Path]
    frames: list[Path]
    warnings: list[str] = field(default_factory=list)


def model_inputs(task, config: EndpointConfig, work_dir: Path) -> ModelInputs:
    """The images sent for ``task``: stitched images first, then frames within both limits."""
    stitched = stitched_images(task)
    warnings = []
    if len(stitched) > config.max_images:
        warnings.append(f"only the first {config.max_images} of {len(stitched)} stitched images were sent")
        stitched = stitched[: config.max_images]
    budget = min(config.max_frames, config.max_images - len(stitched))
    if budget <= 0:
        warnings.append("the stitched images fill the image limit; no video frame was sent")
        return ModelInputs(stitched, [], warnings)
    every = sample_frames(task.video_path, work_dir / "frames")
    frames = pick_evenly(every, budget)
    if len(frames) < len(every):
        warnings.append(f"{len(frames)} of {len(every)} frames sampled at {FRAME_RATE} fps were sent")
    return ModelInputs(stitched, frames, warnings)


PROMPT = """\
Rebuild an interactive web page from a screen recording of someone using it.

What you get, in this order:
- {sheets}
- {frames} frame(s) of the screen recording, one per second of the recording, in time \
order. They show the page as it first appears and then a person using it: what they \
click, type, press and scroll, and how the page responds each time.

The recording was made in a browser viewport of {width}x{height} pixels. Lay the page \
out for exactly that viewport size.

Write one web page that looks like the recorded page and behaves like it, so that \
repeating the recorded actions on your page gives the same results. Follow these rules:
1. Put everything in one self-contained HTML file: markup, CSS in <style> and \
JavaScript in <script>. Load nothing from the network: no external libraries, \
frameworks, stylesheets, scripts or web fonts.
2. Where the page would talk to a server (search, sign-in, cart, saving, loading more), \
imitate the server in your own JavaScript with made-up data, so that every interaction \
works with no network.
3. Give the CSS class "btn" to every element a person can click (buttons, links, tabs, \
menu entries, clickable icons, cards or rows that open something), in addition to any \
other classes it has.
4. To use one of the provided images, write its address as \
{placeholder}/ followed by the file name exactly as it is labelled on the asset sheet, \
for example <img src="{placeholder}/asset001.png" width="120" height="40" alt="logo">. \
The same address form works in CSS url(...). Never invent image names.
5. Give every <img> element width and height attributes.
6. Do not use <iframe> elements.
7. Answer with the complete page in a single fenced code block that opens with ```html \
and closes with ```. Do not split the page over several blocks.
"""

_SHEETS_TEXT = ("{count} asset sheet image(s): grids of the page's original images (photos, icons, "
                "logos), each tile labelled with its file name.")


_NO_SHEETS_TEXT = ("no asset sheet: this page has no image files; draw icons with CSS or inline SVG "
                   "and leave photos as plain coloured boxes.")


def build_prompt(task, n_stitched: int, n_frames: int) -> str:
    """The instructions for one task: counts of images, the resolution, the page rules."""
    from evaluator.bundle import ASSET_PLACEHOLDER

    sheets = _SHEETS_TEXT.format(count=n_stitched) if n_stitched else _NO_SHEETS_TEXT
    return PROMPT.format(sheets=sheets, frames=n_frames, width=task.width, height=task.height,
                         placeholder=ASSET_PLACEHOLDER)


def data_url(path: Path) -> str:
    mime = IMAGE_TYPES.get(path.suffix.lower(), "application/octet-stream")
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def build_request(task, config: EndpointConfig, inputs: ModelInputs) -> dict:
    """The chat-completions request body: one user message, the prompt then every image in order."""
    content = [{"type": "text", "text": build_prompt(task, len(inputs.stitched), len(inputs.frames))}]
    for path in [*inputs.stitched, *inputs.frames]:
        content.append({"type": "image_url", "image_url": {"url": data_url(path)}})
    return {"model": config.model, "messages": [{"role": "user", "content": content}],
            "temperature": TEMPERATURE, "max_tokens": config.max_tokens}
