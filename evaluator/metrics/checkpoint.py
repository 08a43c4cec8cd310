"""All visual scores of one checkpoint: a reference screenshot against the generated one.

low_level = mean(OCR similarity, global similarity)   (official: mean(OCR, DINOv2))
high_level = block comparison total                    (official: MLLM rubric / 100)
Each picture is decoded, scaled and read by Tesseract once; the metrics share the results. What they
derive from the reference alone can come from a folder that keeps it between runs
(:mod:`evaluator.metrics.reference`): then the reference is not decoded at all.
"""

from __future__ import annotations

from PIL import Image

from evaluator.metrics import ImageLike, MetricError, load_image, visual_params
from evaluator.metrics.blocks import compare_blocks, pair_blocks
from evaluator.metrics.ocr import OcrCache, OcrResult, ocr_similarity, ocr_text
from evaluator.metrics.reference import Reference
from evaluator.metrics.visual import canvas_of, canvas_similarity


def score_checkpoint(ref_png: ImageLike | Reference, gen_png: ImageLike, params: dict | None = None,
                     ref_blocks: list[dict] | None = None, gen_blocks: list[dict] | None = None,
                     ref_text: str | None = None, gen_text: str | None = None,
                     cache: OcrCache | None = None) -> dict[str, float]:
    """Scores in [0, 1]: ocr, global, low_level, high_level and the block sub-scores
    (layout, elements, content, style, overall).

    Like the official judge, OCR similarity compares the OCR text of both screenshots;
    ``ref_text`` / ``gen_text`` are for OCR text already at hand (they save a Tesseract run),
    not for DOM text, which would not compare fairly with OCR text of the other side.
    The block comparison reads OCR lines of both screenshots; only with the protocol setting
    ``block_source`` "dom" are blocks given for both sides (DOM text blocks) used instead.
    OCR results are cached by pixel hash in ``cache`` (default: a process-wide LRU), so the
    reference side is read once per task and the block metrics reuse the same reading.
    ``ref_png`` may be a :class:`Reference` prepared under the same visual settings (a kept one).
    """
    settings = visual_params(params)
    ref = _reference(ref_png, settings)
    gen = load_image(gen_png)
    memo = ref.canvas_values((max(ref.size[0], gen.width), max(ref.size[1], gen.height)))
    texts = (ref_text if ref_text is not None else ref.text(cache),
             gen_text if gen_text is not None else ocr_text(gen, settings, cache))
    ocr = ocr_similarity(*texts)
    canvas = canvas_of((ref.size, gen.size), (memo, {}), (lambda: ref.image, lambda: gen),
                       int(settings["global_long_side"]), settings["pad_rgb"])
    glob = canvas_similarity(canvas, int(settings["histogram_bins"]), float(settings["global_min_content"]))
    ref_b, gen_b = pair_blocks(ref, gen, ref_blocks, gen_blocks, settings, cache, lambda: ref.blocks(cache))
    blocks = compare_blocks(canvas, ref_b, gen_b, (ref.size, gen.size), settings)
    # textless_terms: with no text on either screenshot the OCR term compares nothing and drops out.
    textless = settings.get("textless_terms", False) and not any(text.strip() for text in texts)
    low = glob if textless else 0.5 * ocr + 0.5 * glob
    scores = {"ocr": ocr, "global": glob, "low_level": low, "high_level": blocks.pop("total")}
    scores.update(blocks)
    return scores


def derive_reference(ref: Reference, cache: OcrCache | None = None) -> None:
    """Derive every value :func:`score_checkpoint` takes from ``ref`` alone, on the canvas of its own size, with
    its OCR read through ``cache``: by scoring it against a blank page of that size, which differs from it (so
    that its content, which identical pictures skip, is measured too) unless ``ref`` is blank itself."""
    ref.text(cache)
    ref.blocks(cache)
    blank = Image.new("RGB", ref.size, tuple(int(v) for v in ref.settings["pad_rgb"]))
    score_checkpoint(ref, blank, ref.settings, cache=_NOTHING_READ)


class _NothingRead:
    """An OCR cache that finds no words on any picture and keeps nothing: the blank page of :func:`derive_reference`
    needs no Tesseract run, as its scores are thrown away (the reference's own reading is taken before)."""

    def get(self, key: str) -> OcrResult:
        return OcrResult(())

    def put(self, key: str, result: OcrResult) -> None:
        pass


_NOTHING_READ = _NothingRead()


def _reference(ref_png: ImageLike | Reference, settings: dict) -> Reference:
    if not isinstance(ref_png, Reference):
        return Reference(load_image(ref_png), settings)
    if ref_png.settings != settings:
        raise MetricError("the reference was prepared under other visual settings than the checkpoint's")
    return ref_png
