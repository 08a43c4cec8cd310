"""Reading the page out of a chat-completions answer."""

from __future__ import annotations

from dataclasses import dataclass

from evaluator.bundle import extract_answer_html, strip_iframes
from evaluator.generation.config import TaskFailed


@dataclass
class Page:
    html: str
    finish_reason: str | None
    usage: dict
    warnings: list[str]


def page_from_answer(document: dict) -> Page:
    """The page in a chat-completions answer, post-processed; raises TaskFailed when there is none."""
    try:
        choice = document["choices"][0]
        message = choice["message"]
        content = message.get("content")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise TaskFailed("the endpoint's answer has no choices[0].message (not a chat-completions answer)") from None
    finish = choice.get("finish_reason") if isinstance(choice, dict) else None
    content = _text_of(content)
    if not content.strip():
        raise TaskFailed(f"the model's answer is empty (finish_reason={finish})")
    fenced = extract_answer_html(content)
    if fenced == content:
        start = " ".join(content.split())[:80]
        raise TaskFailed(f"the model's answer holds no ```html fenced block (it starts {start!r})")
    if not fenced.strip():
        raise TaskFailed("the model's ```html block is empty")
    warnings = ["the answer was cut off at the max tokens limit"] if finish == "length" else []
    return Page(strip_iframes(fenced), finish, _usage(document.get("usage")), warnings)


def _text_of(content) -> str:
    """Message content as text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text") or "" for part in content if isinstance(part, dict))
    return ""


def _usage(usage) -> dict:
    """Token counts the endpoint reported; reasoning models also say how many went to reasoning."""
    if not isinstance(usage, dict):
        return {}
    names = ("prompt_tokens", "completion_tokens", "total_tokens")
    found = {name: usage[name] for name in names if _count(usage.get(name))}
    details = usage.get("completion_tokens_details")
    if isinstance(details, dict) and _count(details.get("reasoning_tokens")):
        found["reasoning_tokens"] = details["reasoning_tokens"]
    return found


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
