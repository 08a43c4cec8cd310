"""What the reference did at a step: words added and removed, and whether it changed at all.

Built from the task's reference extension (``reference/step_k.json`` text, written by
authoring) when both checkpoints have one, else from OCR of the two checkpoint images.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from evaluator.agents.params import AssertionParams
from evaluator.agents.words import normalize, words
from evaluator.judges.pixels import pair_fraction


@dataclass
class RefDelta:
    """Reference change between checkpoint ``k - 1`` and ``k``."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: bool | None = None  # None: nothing to tell
    source: str = "none"  # reference | ocr | image | none
    detail: dict = field(default_factory=dict)
    texts: tuple[str, str] | None = None  # the reference's text at both checkpoints
    scrolled: bool | None = None  # the reference page scrolled between them (None: unknown)
    images: tuple[Path, Path] | None = None  # the two checkpoint screenshots, when both exist

    def to_dict(self) -> dict:
        return {"added": self.added[:50], "removed": self.removed[:50], "changed": self.changed,
                "source": self.source, "scrolled": self.scrolled, **self.detail}


def word_delta(before: str, after: str) -> tuple[list[str], list[str]]:
    """Words (as a multiset) added and removed going from ``before`` to ``after``."""
    a, b = Counter(_delta_words(before)), Counter(_delta_words(after))
    return sorted((b - a).elements()), sorted((a - b).elements())


def _delta_words(text: str) -> list[str]:
    # single letters are mostly OCR noise and icon glyphs; digits are kept (counters, prices)
    return [w for w in words(text) if len(w) > 1 or w.isdigit()]


def reference_delta(task, k: int, cache=None, params=None, before_k: int | None = None,
                    cache_dir: str | Path | None = None) -> RefDelta:
    """The reference's change at action ``k`` (checkpoint ``before_k``, default ``k - 1``, to ``k``).

    ``cache`` holds the checkpoints' OCR text; ``cache_dir``, when given, keeps their pixel change
    between runs (it is the same for every submission).
    """
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"reference_delta needs a step number k >= 1, got {k!r}")
    start = k - 1 if before_k is None else before_k
    p = AssertionParams.from_dict(params)
    images = [_checkpoint(task, n) for n in (start, k)]
    pixel = _pixel_fraction(images, p, cache_dir)
    detail = {"before_k": start, "after_k": k, "pixel_fraction": pixel}
    refs = [_load_reference(task, n) for n in (start, k)]
    shots = (images[0], images[1]) if images[0] is not None and images[1] is not None else None
    if refs[0] is not None and refs[1] is not None:
        texts = [_reference_text(r) for r in refs]
        changed = pixel > p.pixel_change_fraction if pixel is not None else _refs_differ(refs, texts)
        added, removed = word_delta(*texts)
        scrolled = refs[0].get("scroll") != refs[1].get("scroll")
        return RefDelta(added, removed, changed, "reference", detail, (texts[0], texts[1]), scrolled, shots)
    if shots is None:
        return RefDelta(source="none", detail=detail)
    changed = pixel is not None and pixel > p.pixel_change_fraction
    texts = [_ocr_cached(path, cache) for path in images]
    if texts[0] is None or texts[1] is None:
        return RefDelta(changed=changed, source="image", detail=detail, images=shots)
    added, removed = word_delta(*texts)
    return RefDelta(added, removed, changed, "ocr", detail, (texts[0], texts[1]), images=shots)


def reference_text_delta(task, k: int, before_k: int | None = None) -> RefDelta | None:
    """The reference's change of authored text at action ``k``, from its recorded states alone: no
    pixels, no OCR (``unasserted_reaction`` asks nothing else). None when the states were not recorded."""
    start = k - 1 if before_k is None else before_k
    refs = [_load_reference(task, n) for n in (start, k)]
    if refs[0] is None or refs[1] is None:
        return None
    texts = [_reference_text(r) for r in refs]
    added, removed = word_delta(*texts)
    scrolled = refs[0].get("scroll") != refs[1].get("scroll")
    return RefDelta(added, removed, _refs_differ(refs, texts), "reference", {"before_k": start, "after_k": k},
                    (texts[0], texts[1]), scrolled)


def checkpoint_pair(task, k: int, numbering: str) -> tuple[int, int] | None:
    """The reference checkpoints (before, after) that show action ``k``'s change, or None when the
    task set's numbering has no such pair (the judge then uses the page alone)."""
    if numbering == "after_action":
        return k - 1, k
    flagged = list(getattr(task, "flagged_steps", []))
    if numbering != "flagged" or k not in flagged:
        return None
    n = flagged.index(k) + 1
    return n - 1, n


def judged_pairs(task, numbering: str) -> list[tuple[int, int]]:
    """The reference checkpoint pairs the judge compares for ``task``'s assertions."""
    pairs = (checkpoint_pair(task, k, numbering)
             for k, action in enumerate(getattr(task, "actions", []), 1) if getattr(action, "logical_assertion", None))
    return [pair for pair in pairs if pair is not None]


def keep_pixel_changes(task, numbering: str, params, cache_dir: str | Path) -> int:
    """Store in ``cache_dir`` the pixel change of every pair :func:`judged_pairs` lists: for the trusted
    step that fills the reference OCR folder, which scoring jobs only read. Returns the pairs kept."""
    p = AssertionParams.from_dict(params)
    kept = 0
    for start, k in judged_pairs(task, numbering):
        kept += _pixel_fraction([_checkpoint(task, start), _checkpoint(task, k)], p, cache_dir) is not None
    return kept


def _load_reference(task, n: int) -> dict | None:
    loader = getattr(task, "load_reference", None)
    if loader is None:
        return None
    try:
        ref = loader(n)
    except (OSError, ValueError):
        return None
    return ref if isinstance(ref, dict) else None


def _reference_text(ref: dict) -> str:
    text = ref.get("text")
    if isinstance(text, str) and text.strip():
        return text
    return "\n".join(str(b.get("text", "")) for b in ref.get("blocks", []) if isinstance(b, dict))


def _refs_differ(refs: list[dict], texts: list[str]) -> bool:
    return (normalize(texts[0]) != normalize(texts[1]) or refs[0].get("url") != refs[1].get("url")
            or refs[0].get("scroll") != refs[1].get("scroll"))


def _checkpoint(task, n: int) -> Path | None:
    path_of = getattr(task, "checkpoint_path", None)
    if path_of is None:
        return None
    try:
        path = Path(path_of(n))
    except (OSError, ValueError, TypeError):
        return None
    return path if path.is_file() else None


def _pixel_fraction(images: list[Path | None], p: AssertionParams, cache_dir) -> float | None:
    if images[0] is None or images[1] is None:
        return None
    try:
        return round(pair_fraction(images[0], images[1], p.diff_scale, p.pixel_tolerance, cache_dir), 6)
    except OSError:
        return None


def _ocr_cached(path: Path, cache) -> str | None:
    key = f"ocr-text:{path.resolve()}"
    if cache is not None:
        try:
            hit = cache.get(key)
        except Exception:  # any cache object that does not speak dict: work without it
            hit = None
        if hit is not None:
            return hit
    text = _ocr_image(path)
    if text is not None and cache is not None:
        with contextlib.suppress(Exception):  # read-only or foreign cache: nothing lost but speed
            cache[key] = text
    return text


def _ocr_image(path: Path) -> str | None:
    try:
        from evaluator.metrics.ocr import ocr_text
    except ImportError:
        return None
    return ocr_text(path)
