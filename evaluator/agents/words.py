"""Word handling shared by targeting and the assertion judge: tokens, quotes, fuzzy matches.

Everything here is deterministic and cheap: lower-cased word tokens, identifier splitting
(``addToCart`` -> add, to, cart), quoted strings, and rapidfuzz-based similarity.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

from rapidfuzz import fuzz

# Words that carry no identity in an action description or an assertion.
STOPWORDS = frozenset(
    """a an the this that these those it its is are was were be been being am of to in on at by for
    from with into onto over under and or but if then so as than too very can could should would will
    shall may might must do does did done has have had having not no yes you your yours we our us i me
    my he she they them their his her there here where when which who whom what how why all any each
    some such only own same just also again once up down out off about after before above below
    between through during while until within without upon via per other another more most less
    few both either neither nor""".split()
)

# The grammar among the stopwords: articles, prepositions, linking words, pronouns, auxiliaries.
# Quantities and particles ("all", "more", "up", "off") stay: identifiers carry them (toggle-all,
# sign-up). "in" and "on" go: CSS frameworks use them as state classes (Bootstrap's "collapse in").
FILLER_WORDS = frozenset(
    """a an the this that these those it its is are was were be been being am of to as by for from with
    and or but if then so than too very can could should would will shall may might must do does did has
    have had you your yours we our us i me my he she they them their his her which who whom what how why
    such own same just also via per into onto upon at in on""".split()
)

QUOTE_PATTERNS = (
    re.compile(r'"([^"]+)"'),
    re.compile(r"“([^”]+)”"),
    re.compile(r"‘([^’]+)’"),
    re.compile(r"«([^»]+)»"),
    re.compile(r"`([^`]+)`"),
    # single quotes only as real quotes: not the apostrophe in "user's"
    re.compile(r"(?<![\w])'([^']*[^'\s])'(?![\w])"),
)

# Icon and control vocabulary: words a description uses for what class names call otherwise.
SYNONYM_GROUPS = (
    "alert alerts notification notifications bell",
    "cart basket bag trolley",
    "user profile account avatar person",
    "search find magnifier magnifying",
    "menu hamburger bars burger",
    "close dismiss times cross",
    "settings setting gear cog cogs preferences options",
    "home house",
    "mail email envelope message messages inbox",
    "delete trash bin remove",
    "edit pencil pen modify",
    "favorite favourite heart like",
    "next forward",
    "previous prev back",
    "filter funnel",
    "calendar date",
    "phone call telephone",
    "location map marker pin",
    "plus add",
    "minus subtract",
    "info information",
    "help question",
    "share send",
    "logout signout",
    "login signin",
)
SYNONYMS = {word: group.split()[0] for group in SYNONYM_GROUPS for word in group.split()}
WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[a-zA-Z])(?=[0-9])|(?<=[0-9])(?=[a-zA-Z])")


def normalize(text: str | None) -> str:
    """Lower-cased, NFKC-folded text with whitespace collapsed."""
    if not text:
        return ""
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def words(text: str | None) -> list[str]:
    """Lower-case word tokens in order (apostrophes inside words kept, possessive 's dropped)."""
    if not text:
        return []
    return list(_short_words(text) if len(text) <= MEMO_MAX_CHARS else _words(text))


def _words(text: str) -> tuple[str, ...]:
    out = []
    for token in WORD_RE.findall(normalize(text)):
        token = token.replace("’", "'")
        out.append(token[:-2] if token.endswith("'s") else token)
    return tuple(out)


# Element search asks for the words of the same labels, classes and ids once per candidate and
# description part: short strings are split once per worker (a page's long texts are not kept).
MEMO_MAX_CHARS = 200
MEMO_SIZE = 1 << 15
_short_words = functools.lru_cache(maxsize=MEMO_SIZE)(_words)


def content_words(text: str | None) -> list[str]:
    """Word tokens without stopwords, in order; all tokens when every one is a stopword ("More")."""
    tokens = words(text)
    kept = [w for w in tokens if w not in STOPWORDS]
    return kept or tokens


def label_words(text: str | None) -> list[str]:
    """Word tokens of a quoted label that an identifier may spell: "Mark all as complete" -> mark, all,
    complete (``content_words`` would drop "all")."""
    tokens = words(text)
    kept = [w for w in tokens if w not in FILLER_WORDS]
    return kept or tokens


def canonical(word: str) -> str:
    """The synonym group's first word ("bell" -> "alert"), or the word itself."""
    return SYNONYMS.get(word, word)


def split_identifier(text: str | None) -> list[str]:
    """Tokens of an identifier or class list: camelCase, kebab-case, snake_case, paths, digits."""
    if not text:
        return []
    return list(_short_identifier(text) if len(text) <= MEMO_MAX_CHARS else _split_identifier(text))


def _split_identifier(text: str) -> tuple[str, ...]:
    parts = re.split(r"[\s\-_./#:?=&,;()\[\]{}]+", unicodedata.normalize("NFKC", text))
    out = []
    for part in parts:
        out.extend(p.lower() for p in CAMEL_RE.split(part) if p)
    return tuple(out)


_short_identifier = functools.lru_cache(maxsize=MEMO_SIZE)(_split_identifier)


def quote_spans(text: str | None) -> list[tuple[int, int, str]]:
    """(start, end, inner text) of each quoted string, in order of appearance."""
    spans: list[tuple[int, int, str]] = []
    for pattern in QUOTE_PATTERNS:
        for match in pattern.finditer(text or ""):
            if any(start <= match.start() < end for start, end, _ in spans):
                continue  # a quote inside a quote: the outer one already counts
            inner = match.group(1).strip()
            if inner:
                spans.append((match.start(), match.end(), inner))
    return sorted(spans)


def quoted(text: str | None) -> list[str]:
    """Quoted strings in the text, in order of appearance, stripped, without empties."""
    return [inner for _, _, inner in quote_spans(text)]


def strip_quoted(text: str | None) -> str:
    """The text with every quoted string replaced by a space."""
    text = text or ""
    for pattern in QUOTE_PATTERNS:
        text = pattern.sub(" ", text)
    return text


@functools.lru_cache(maxsize=MEMO_SIZE)
def token_similarity(a: str, b: str) -> float:
    """Similarity of two single words in [0, 1]; plurals and small typos still score high."""
    if a == b:
        return 1.0
    if a.isdigit() or b.isdigit():
        return 0.0  # "2" and "3" are different numbers, however close the strings
    short, long_ = sorted((a, b), key=len)
    if len(short) >= 4 and long_.startswith(short) and len(short) >= 0.6 * len(long_):
        return 0.9  # round / rounded, collapse / collapsed
    return fuzz.ratio(a, b) / 100.0


def best_token_match(token: str, pool: Iterable[str], threshold: float) -> float:
    """Best similarity of ``token`` to any word in ``pool``, or 0 below ``threshold``."""
    best = 0.0
    for other in pool:
        score = token_similarity(token, other)
        if score > best:
            best = score
            if best == 1.0:
                break
    return best if best >= threshold else 0.0


def token_f1(query: Iterable[str], target: Iterable[str], threshold: float = 0.85) -> float:
    """Soft F1 between two word sets: recall over ``query``, precision over ``target``."""
    q, t = set(query), set(target)
    if not q or not t:
        return 0.0
    recall = sum(best_token_match(w, t, threshold) for w in q) / len(q)
    precision = sum(best_token_match(w, q, threshold) for w in t) / len(t)
    if recall + precision == 0:
        return 0.0
    return 2 * recall * precision / (recall + precision)


def count_phrase(haystack: str, phrase: str) -> int:
    """How often ``phrase`` occurs in ``haystack`` on word boundaries (case-insensitive)."""
    phrase = normalize(phrase).strip(".,;:!?()[]{}\"'")
    if not phrase:
        return 0
    pattern = r"(?<![^\W_])" + re.escape(phrase) + r"(?![^\W_])"
    return len(re.findall(pattern, normalize(haystack)))
