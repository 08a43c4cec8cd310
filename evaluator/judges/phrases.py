"""Key phrases of a logical assertion and what each must do for the assertion to hold.

"'Walk the dog' is added below 'Buy milk' and the counter shows '2 items left'" ->
"Walk the dog" must appear (more occurrences after than before), "Buy milk" is only a
landmark (present after), "2 items left" must be shown (present after).

Each clause (split at commas, "and", "while", "but", "then") gets its own polarity; a clause
without a verb cue takes the sentence's. A phrase right after "below", "next to", "in", ...
is a landmark and only needs to be present; one after "from" is what the page changes away
from and must become rarer.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from evaluator.agents.words import STOPWORDS, normalize, quote_spans, strip_quoted, words

APPEARANCE = re.compile(
    r"\b(appear(s|ed|ing)?|pops? up|popped up|shows? up|added|inserted|created|opens?|opened|expand(s|ed)?|"
    r"reveal(s|ed)?|becomes? visible|now (shows?|displays?|visible|contains?|lists?)|new|increase[sd]?|"
    r"incremented|goes up|slides? (in|down|open)|comes? into view)\b",
    re.I,
)
REMOVAL = re.compile(
    r"\b(disappear(s|ed)?|removed?|deleted?|hidden|hides?|closes?|closed|collapse[sd]?|cleared|dismissed|"
    r"gone|vanish(es|ed)?|no longer|not (be )?(visible|shown|displayed)|decrease[sd]?|decremented)\b",
    re.I,
)
UNCHANGED = re.compile(r"\b(remains?|stays?|unchanged|does not change|doesn't change|still)\b", re.I)
CLAUSE_SPLIT = re.compile(r"\s*(?:[,;]|\band\b|\bwhile\b|\bbut\b|\bthen\b|\bwhereas\b)\s*", re.I)
LANDMARK_BEFORE = re.compile(r"\b(below|above|under|beneath|after|before|beside|near|next to|inside|within|in|on|"
                             r"into|to|onto|of|at)\s+(?:the\s+|a\s+|an\s+)?$", re.I)
FROM_BEFORE = re.compile(r"\bfrom\s+(?:the\s+|a\s+|an\s+)?$", re.I)
NUMBER_RE = re.compile(r"(?<![\w.])[$€£]?\d+(?:[.,]\d+)*%?")
CAPITAL_RE = re.compile(r"\b[A-Z][\w'’&-]*(?:\s+(?:of|and|&|the|to|for|in)?\s*[A-Z][\w'’&-]*)*")
PLACEHOLDER = "\ue000{}\ue001"
PLACEHOLDER_RE = re.compile("\ue000(\\d+)\ue001")
# Words of an assertion's grammar, not of the page ("the modal is displayed after clicking").
ASSERTION_WORDS = frozenset(
    """page appears appear appeared displayed display displays shown show shows showing visible
    updated update updates changes change changed clicked clicking click user now should becomes
    become reflects reflect successfully correctly properly contains contain containing state
    screen view section element elements button link icon field text content area new
    opens open opened closes close closed removed remove added add list lists listed indicates
    indicating expected result results action selected highlighted active""".split()
)


@dataclass
class Phrase:
    """A piece of text the after-state must show (or stop showing)."""

    text: str
    kind: str  # quoted | number | capital | word
    mode: str = "state"  # appearance | removal | state | unchanged


def polarity(text: str) -> str:
    """"removal", "appearance", "unchanged" or "state" (presence after is enough)."""
    text = strip_quoted(text)
    if REMOVAL.search(text):
        return "removal"
    if UNCHANGED.search(text) and not APPEARANCE.search(text):
        return "unchanged"
    if APPEARANCE.search(text):
        return "appearance"
    return "state"


def key_phrases(assertion: str, before_text: str = "", after_text: str = "", reference_words=(),
                participles: bool = False) -> list[Phrase]:
    """Quoted strings, numbers and capitalised phrases, each with its clause's polarity.

    With none of those, content words whose count differs between the before and after text
    (or that the reference's delta contains): words the action's effect can speak to.
    """
    sentence_mode = polarity(assertion)
    masked, quotes = _mask_quotes(assertion)
    phrases: list[Phrase] = []
    for clause in CLAUSE_SPLIT.split(masked):
        mode = _clause_mode(clause, sentence_mode, participles)
        phrases += _clause_phrases(clause, quotes, mode)
    if phrases:
        return _unique(phrases)
    return _word_phrases(strip_quoted(assertion), sentence_mode, before_text, after_text, reference_words)


def _mask_quotes(text: str) -> tuple[str, list[str]]:
    """Replace quoted strings by placeholders so clause splitting never cuts inside one."""
    out, quotes, cursor = [], [], 0
    for start, end, inner in quote_spans(text):
        out += [text[cursor:start], PLACEHOLDER.format(len(quotes))]
        quotes.append(inner)
        cursor = end
    out.append(text[cursor:])
    return "".join(out), quotes


STATE_CUE = re.compile(r"\b(shows?|displays?|reads?|lists?|contains?|is|are|becomes?)\b", re.I)
# iwr-det-12 (participle_cues): "a calendar showing 'January 2024'" says what the page shows as plainly as "shows"
PARTICIPLE_CUE = re.compile(r"\b(showing|displaying|reading|listing|containing)\b", re.I)


def _clause_mode(clause: str, sentence_mode: str, participles: bool = False) -> str:
    own = polarity(PLACEHOLDER_RE.sub(" ", clause))
    if own != "state":
        return own
    has_cue = bool(STATE_CUE.search(clause) or participles and PARTICIPLE_CUE.search(clause))
    return "state" if has_cue else sentence_mode


def _clause_phrases(clause: str, quotes: list[str], mode: str) -> list[Phrase]:
    phrases = []
    for match in PLACEHOLDER_RE.finditer(clause):
        phrases.append(Phrase(quotes[int(match.group(1))], "quoted", _local_mode(clause[: match.start()], mode)))
    plain = PLACEHOLDER_RE.sub(" , ", clause)
    for match in NUMBER_RE.finditer(plain):
        phrases.append(Phrase(match.group(0).rstrip(".,"), "number", _local_mode(plain[: match.start()], mode)))
    for text, start in _capital_phrases(plain):
        phrases.append(Phrase(text, "capital", _local_mode(plain[:start], mode)))
    return phrases


def _local_mode(prefix: str, mode: str) -> str:
    """A landmark ("below 'Buy milk'") need only be present; "from 'Light'" must become rarer."""
    if FROM_BEFORE.search(prefix):
        return "removal"
    if LANDMARK_BEFORE.search(prefix) and mode != "removal":
        return "state"
    return mode


def _capital_phrases(text: str) -> list[tuple[str, int]]:
    """Runs of capitalised words; a lone capitalised word that starts a sentence does not count."""
    out = []
    for match in CAPITAL_RE.finditer(text):
        tokens = match.group(0).strip().split()
        starts_sentence = re.search(r"(^|[.!?:]\s*)$", text[: match.start()]) is not None
        while tokens and tokens[0].lower() in STOPWORDS | ASSERTION_WORDS:
            tokens.pop(0)
            starts_sentence = False
        if not tokens or (starts_sentence and len(tokens) == 1):
            continue
        out.append((" ".join(tokens), match.start()))
    return out


def _word_phrases(text: str, mode: str, before_text: str, after_text: str, reference_words) -> list[Phrase]:
    before, after = Counter(words(before_text)), Counter(words(after_text))
    moved = {w for w in before.keys() | after.keys() if before[w] != after[w]} | set(reference_words)
    candidates = [w for w in words(text) if w not in STOPWORDS and w not in ASSERTION_WORDS and len(w) > 2]
    return _unique([Phrase(w, "word", mode) for w in candidates if w in moved])


def _unique(phrases: list[Phrase]) -> list[Phrase]:
    seen, out = set(), []
    for phrase in phrases:
        key = normalize(phrase.text)
        if key and key not in seen:
            seen.add(key)
            out.append(phrase)
    return out
