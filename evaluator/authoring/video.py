"""Turn Playwright's WebM recording into the benchmark's H.264 MP4."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from evaluator.authoring.script import AuthoringError

FFMPEG_TIMEOUT_S = 300
BLANK_LEVEL = 250  # grey level under which a pixel is not part of a blank white frame


def convert_to_mp4(source: Path, target: Path, start_s: float = 0.0) -> Path:
    """Encode ``source`` from ``start_s`` on as H.264 / yuv420p MP4 that plays before it is fully loaded."""
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        raise AuthoringError("ffmpeg is not installed (scripts/setup.sh installs it)")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial.mp4")
    command = [
        ffmpeg, "-nostdin", "-y", "-v", "error", "-ss", f"{max(0.0, start_s):.3f}", "-i", str(source),
        # H.264 needs even dimensions; yuv420p plays everywhere; faststart moves the index first.
        "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2",
        "-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-pix_fmt", "yuv420p",
        "-movflags", "+faststart", "-an", str(partial),
    ]  # fmt: skip
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=FFMPEG_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise AuthoringError(f"ffmpeg took longer than {FFMPEG_TIMEOUT_S} s to convert {source}") from None
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        last_line = (result.stderr.strip().splitlines() or ["unknown error"])[-1]
        raise AuthoringError(f"ffmpeg could not convert {source}: {last_line}")
    partial.replace(target)
    return target


def first_content_time(source: Path, fps: int = 10) -> float:
    """Seconds until the recording first shows something other than a blank white page.

    A recording starts with the browser's empty page while the task's page loads; those
    frames carry nothing, so the published video starts shortly before the page appears.
    """
    width, height = 64, 36
    command = [
        "ffmpeg", "-nostdin", "-v", "error", "-i", str(source),
        "-vf", f"fps={fps},scale={width}:{height}", "-f", "rawvideo", "-pix_fmt", "gray", "-",
    ]  # fmt: skip
    try:
        result = subprocess.run(command, capture_output=True, timeout=FFMPEG_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return 0.0
    frame = width * height
    data = result.stdout
    for index in range(len(data) // frame):
        if min(data[index * frame : (index + 1) * frame]) < BLANK_LEVEL:
            return index / fps
    return 0.0


def probe_video(path: Path) -> dict:
    """Codec, pixel format, size and duration of the first video stream (via ffprobe)."""
    command = [
        "ffprobe", "-v", "error", "-select_streams", "v:0",
        "-show_entries", "stream=codec_name,pix_fmt,width,height:format=duration", "-of", "json", str(path),
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    if result.returncode != 0:
        raise AuthoringError(f"ffprobe cannot read {path}")
    data = json.loads(result.stdout)
    stream = (data.get("streams") or [{}])[0]
    return {**stream, "duration": float(data.get("format", {}).get("duration", 0) or 0)}
