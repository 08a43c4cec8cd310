"""Run by tests/evaluator/test_official_models.py with the optional environment's Python (.venv-official).

Builds a tiny random DINOv2 with transformers, pins its files' sums, loads the official models
(that DINOv2 and the packaged English EasyOCR weights) and prints what the test asserts as JSON.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch
from PIL import Image, ImageDraw, ImageFont
from transformers import Dinov2Config, Dinov2Model

from evaluator.metrics.ocr import ocr_similarity
from evaluator.official.judge import cosine01
from evaluator.official.visual import OfficialModels, WeightsError, sha256_of

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def page(text: str, colour=(30, 30, 30), size=(640, 400)) -> Image.Image:
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    draw.text((40, 60), text, fill=colour, font=ImageFont.truetype(FONT, 40))
    draw.rectangle((40, 200, 300, 260), fill=(40, 90, 200))
    return image


def main(folder: Path) -> dict:
    torch.manual_seed(0)
    config = Dinov2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                          image_size=224, patch_size=14)
    Dinov2Model(config).save_pretrained(folder)
    pinned = {name: sha256_of(folder / name) for name in ("config.json", "model.safetensors")}
    started = time.monotonic()
    models = OfficialModels(folder, pinned)
    loaded_s = time.monotonic() - started
    shopping, other = page("Shopping list"), page("Checkout now", colour=(200, 30, 30))
    started = time.monotonic()
    text = models.text(shopping)
    ocr_s = time.monotonic() - started
    same = cosine01(models.embedding(shopping), models.embedding(shopping.copy()))
    differ = cosine01(models.embedding(shopping), models.embedding(other))
    tampered = folder / "model.safetensors"
    tampered.write_bytes(tampered.read_bytes()[:-1] + b"\0")
    try:
        OfficialModels(folder, pinned)
        refused = ""
    except WeightsError as exc:
        refused = str(exc)
    return {"text": text, "ocr_vs_truth": ocr_similarity(text.lower(), "shopping list"), "same": same,
            "differ": differ, "dim": len(models.embedding(shopping)), "refused": refused,
            "load_s": round(loaded_s, 2), "ocr_s": round(ocr_s, 2)}


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
