"""A leaderboard view (split, protocol version, filters) and the constants every part shares."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace

from django.conf import settings
from django.core.cache import cache

from leaderboard import cache as board_cache
from leaderboard import official
from leaderboard.cache import CACHE_SECONDS, get_generation
from leaderboard.models import Evaluation
from leaderboard.models.submissions import PAPER_PROTOCOL
from leaderboard.models.tasks import Split

CI_RESAMPLES = 2000  # evaluator.scoring.bootstrap_ci's default, stored with each evaluation when it is scored
RANK_RESAMPLES = 1000
RANK_SEED = 0
CONFIDENCE = 0.95
DEFAULT_SPLIT = "test"
DEFAULT_PROTOCOL = "iwr-det"
PAPER_SLUG = "paper"
CATEGORY_AXES = ("interaction_complexity", "visual_complexity", "domain")
AXIS_LABELS = {"interaction_complexity": "Interaction level", "visual_complexity": "Visual complexity",
               "domain": "Domain"}
WEIGHTS = ("all", "open", "proprietary")
SOURCES = ("all", "evaluated", "reported")
SELECTIONS = ("best", "latest")
SEARCH_MAX = 100  # characters of a search (model or organisation)
JUDGE_MAX = 401  # characters of a judge parameter: two model ids and the separator


class QueryError(ValueError):
    """A leaderboard query parameter has a value we do not know; the message says which."""


@dataclass(frozen=True)
class Query:
    """One leaderboard view: split, protocol full name and filters."""

    split: str = DEFAULT_SPLIT
    protocol: str = ""
    weights: str = "all"
    verified: bool = False
    source: str = "all"
    selection: str = "best"
    q: str = ""  # search: entries whose model or organisation contains it (ranks stay the whole view's)
    # iwr-official only: the judge (leaderboard.official.judge_key); each judge's scores are a board of their own.
    judge: str = ""

    def key(self) -> str:
        """A short cache-safe name of the view (protocol names may hold spaces)."""
        text = "|".join(str(value) for value in asdict(self).values())
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    def params(self, **changes) -> dict[str, str]:
        """URL parameters that reproduce this view (defaults left out), with ``changes`` applied."""
        query = replace(self, **changes)
        params = {"split": query.split, "protocol": protocol_slug(query.protocol)}
        if query.judge:
            params["judge"] = query.judge
        if query.weights != "all":
            params["weights"] = query.weights
        if query.verified:
            params["verified"] = "1"
        if query.source != "all":
            params["source"] = query.source
        if query.selection != settings.LEADERBOARD_SELECTION:
            params["selection"] = query.selection
        if query.q:
            params["q"] = query.q
        return params

    def matches(self, model_name: str, organisation: str) -> bool:
        """Whether an entry is one the search ``q`` asks for (always, without a search)."""
        needle = self.q.casefold()
        return not needle or needle in model_name.casefold() or needle in organisation.casefold()


def parse_query(params: Mapping[str, str]) -> Query:
    """The view asked for by URL parameters ``split``, ``protocol``, ``weights``, ``verified``,
    ``source``, ``selection`` and ``q`` (search); raises :class:`QueryError` naming a bad value."""
    split = _choice(params, "split", DEFAULT_SPLIT, tuple(Split.values))
    protocol = resolve_protocol(params.get("protocol") or "")
    return Query(
        split=split,
        protocol=protocol,
        judge=parse_judge(protocol, split, params.get("judge") or ""),
        weights=_choice(params, "weights", "all", WEIGHTS),
        verified=_flag(params, "verified"),
        source=_choice(params, "source", "all", SOURCES),
        selection=_choice(params, "selection", settings.LEADERBOARD_SELECTION, SELECTIONS),
        q=parse_search(params.get("q") or ""),
    )


def parse_search(text: str) -> str:
    """A search text, whitespace collapsed; raises QueryError when it is too long or holds control characters."""
    value = " ".join(text.split())
    if len(value) > SEARCH_MAX:
        raise QueryError(f"q is {len(value)} characters long: search with at most {SEARCH_MAX}")
    if any(ord(char) < 32 or ord(char) == 127 for char in value):
        raise QueryError("q holds control characters: search with plain text")
    return value


def parse_judge(protocol: str, split: str, value: str) -> str:
    """The judge of a view: only official protocols have one; without a ``judge`` parameter, the first
    judge with scores on the split. Raises QueryError for a judge on a protocol without judges."""
    value = value.strip()
    if not official.is_official(protocol):
        if value:
            raise QueryError(f"judge={value!r} is not valid: protocol {protocol} has no judge")
        return ""
    if len(value) > JUDGE_MAX or any(ord(char) < 32 for char in value):
        raise QueryError("judge is not valid: use JUDGE-MODEL or JUDGE-MODEL+GROUNDING-MODEL")
    if value:
        return official.judge_key(*official.judge_models(value))
    judges = sorted(judge for (name, judge), splits in scored_judges().items() if name == protocol and split in splits)
    return judges[0] if judges else ""


def _choice(params: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = (params.get(name) or "").strip() or default
    if value not in allowed:
        raise QueryError(f"{name}={value!r} is not valid: use one of {', '.join(allowed)}")
    return value


def _flag(params: Mapping[str, str], name: str) -> bool:
    value = (params.get(name) or "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise QueryError(f"{name}={value!r} is not valid: use 1 or 0")


def resolve_protocol(value: str) -> str:
    """The protocol full name a URL value stands for.

    Empty -> the default protocol's current version; ``paper`` -> the paper's reported
    results; a bare protocol name -> its current version; a full name -> itself when the
    evaluator knows it or scores under it exist.
    """
    from evaluator.protocols import get_protocol

    value = value.strip()
    if value in (PAPER_SLUG, PAPER_PROTOCOL):
        return PAPER_PROTOCOL
    try:
        return get_protocol(value or DEFAULT_PROTOCOL).full_name
    except ValueError:
        pass
    if value in scored_protocols():
        return value
    known = sorted({*scored_protocols(), *_registered_protocols()} - {PAPER_PROTOCOL}) + [PAPER_SLUG]
    raise QueryError(f"protocol={value!r} is not known: use one of {', '.join(known)}")


def protocol_slug(full_name: str) -> str:
    return PAPER_SLUG if full_name == PAPER_PROTOCOL else full_name


def protocol_label(full_name: str, judge: str = "") -> str:
    if full_name == PAPER_PROTOCOL:
        return "Reported in paper (official judge)"
    return f"{full_name} ({official.judge_label(judge)})" if judge else full_name


def _registered_protocols() -> list[str]:
    from evaluator.protocols import PROTOCOLS

    return [protocol.full_name for protocol in PROTOCOLS.values()]


def scored_protocols() -> dict[str, set[str]]:
    """Protocol full name -> the splits holding scored public evaluations under it (cached)."""
    key = board_cache.key("protocols", generation=get_generation())
    found = cache.get(key)
    if found is None:
        rows = (Evaluation.objects.filter(status=Evaluation.Status.SCORED, submission__public=True)
                .values_list("protocol", "submission__split").distinct().order_by())
        found = {}
        for protocol, split in rows:
            found.setdefault(protocol, set()).add(split)
        cache.set(key, found, CACHE_SECONDS)
    return found


def scored_judges() -> dict[tuple[str, str], set[str]]:
    """(protocol full name, judge) -> the splits holding scored public evaluations by that judge (cached);
    the judge is "" for protocols without one."""
    key = board_cache.key("protocol-judges", generation=get_generation())
    found = cache.get(key)
    if found is None:
        rows = (Evaluation.objects.filter(status=Evaluation.Status.SCORED, submission__public=True)
                .values_list("protocol", "judge_model", "grounding_model", "submission__split").distinct()
                .order_by())
        found = {}
        for protocol, judge, grounding, split in rows:
            found.setdefault((protocol, official.judge_key(judge, grounding)), set()).add(split)
        cache.set(key, found, CACHE_SECONDS)
    return found


def board_tabs(split: str) -> list[tuple[str, str]]:
    """(protocol, judge) of every board worth a tab on ``split``: :func:`protocol_tabs`, with an official
    protocol version split into one tab per judge (their scores never share a ranking)."""
    tabs = []
    for name in protocol_tabs(split):
        if official.is_official(name):
            judges = sorted(judge for (protocol, judge), splits in scored_judges().items()
                            if protocol == name and split in splits)
            tabs += [(name, judge) for judge in judges or [""]]
        else:
            tabs.append((name, ""))
    return tabs


def protocol_tabs(split: str) -> list[str]:
    """Protocols worth a tab on ``split``: the default's current version, then every protocol
    with scores on that split (newest versions first), the paper's results last."""
    default = resolve_protocol("")
    present = [name for name, splits in scored_protocols().items() if split in splits]
    others = sorted((name for name in present if name not in (default, PAPER_PROTOCOL)), key=natural_key,
                    reverse=True)
    return [default, *others, *([PAPER_PROTOCOL] if PAPER_PROTOCOL in present else [])]


def natural_key(text: str) -> list:
    """Sort "L2" before "L10" and words alphabetically."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", str(text))]

