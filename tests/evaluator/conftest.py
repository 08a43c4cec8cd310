"""Helpers shared by the evaluator tests: one browser per test module, rendered page-like pictures for the
visual-metric tests and a Tesseract-run counter."""

from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from evaluator.metrics import ocr
from evaluator.metrics.ocr import OcrCache

ROOT = Path(__file__).resolve().parents[2]
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
BENCHMARK = ROOT / "var" / "benchmark"

PAGE_LINES = [
    "Welcome to the Dashboard",
    "Monthly earnings report",
    "Pending requests and tasks",
    "Settings and user profile",
    "Download the latest invoice",
    "Contact support for help",
]

SHARED = OcrCache()  # pictures recur across tests; tests that count Tesseract runs use their own cache


def render_page(lines=PAGE_LINES, size=(1280, 720), font_size=24, color=(33, 37, 41), bg=(255, 255, 255),
                header=(78, 115, 223), dx=0, dy=0):
    """A page-like picture: a coloured header bar and lines of DejaVu text on a plain background,
    everything moved by (``dx``, ``dy``) pixels."""
    img = Image.new("RGB", size, bg)
    draw = ImageDraw.Draw(img)
    font = ImageFont.truetype(FONT, font_size)
    if header:
        draw.rectangle([dx, dy, size[0] + dx, 60 + dy], fill=header)
    for i, line in enumerate(lines):
        draw.text((80 + dx, 110 + i * 70 + dy), line, font=font, fill=color)
    return img


def sample_checkpoints() -> list[Path]:
    """Every checkpoint screenshot of the built sample benchmark (dev and test); empty when not built."""
    return sorted(BENCHMARK.glob("*/data/*/checkpoints/step_*.png"))


@pytest.fixture
def tesseract_runs(monkeypatch):
    """A list that grows by one entry (the OCR settings) per Tesseract run; the real engine still runs."""
    calls = []
    real = ocr._run_tesseract

    def run(*args):
        calls.append(args[1:])
        return real(*args)

    monkeypatch.setattr(ocr, "_run_tesseract", run)
    return calls


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium (the evaluator's own launch, sandbox and settings) for a test module."""
    from evaluator.browser import launch

    with launch() as running:
        yield running
