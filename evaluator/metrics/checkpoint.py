"""All visual scores of one checkpoint: a reference screenshot against the generated one.

low_level = mean(OCR similarity, global similarity)   (official: mean(OCR, DINOv2))
high_level = block comparison total                    (official: MLLM rubric / 100)
Each picture is decoded, scaled and read by Tesseract once; the metrics share the results.
"""

from __future__ import annotations

from evaluator.metrics import ImageLike, load_image, visual_params
from evaluator.metrics.blocks import compare_blocks, pair_blocks
from evaluator.metrics.ocr import OcrCache, ocr_similarity, ocr_text
from evaluator.metrics.visual import canvas_similarity, common_canvas


def score_checkpoint(ref_png: ImageLike, gen_png: ImageLike, params: dict | None = None,
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
    """
    settings = visual_params(params)
    ref, gen = load_image(ref_png), load_image(gen_png)
    texts = (ref_text if ref_text is not None else ocr_text(ref, settings, cache),
             gen_text if gen_text is not None else ocr_text(gen, settings, cache))
    ocr = ocr_similarity(*texts)
    canvas = common_canvas(ref, gen, int(settings["global_long_side"]), settings["pad_rgb"])
    glob = canvas_similarity(canvas, int(settings["histogram_bins"]), float(settings["global_min_content"]))
    ref_b, gen_b = pair_blocks(ref, gen, ref_blocks, gen_blocks, settings, cache)
    blocks = compare_blocks(canvas, ref_b, gen_b, (ref.size, gen.size), settings)
    # textless_terms: with no text on either screenshot the OCR term compares nothing and drops out.
    textless = settings.get("textless_terms", False) and not any(text.strip() for text in texts)
    low = glob if textless else 0.5 * ocr + 0.5 * glob
    scores = {"ocr": ocr, "global": glob, "low_level": low, "high_level": blocks.pop("total")}
    scores.update(blocks)
    return scores
