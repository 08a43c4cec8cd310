"""The leaderboard package reads one way: each module imports only from its own layer or below,
and no modules import each other in a circle (function-level imports included).

    0 foundations  models, env, cache, crypto, secrecy, checks, the Celery app, web-tier settings
    1 rules, reads access, quotas, tasksets, ranking, exports, charts, notifications, previews, board_pages,
                   accounts, held-out charging, file serving, mail, the official judge's settings, agreement
    2 intake       forms, accepting, cancelling, rescoring, status payloads, dispatch (leaderboard/intake/)
    3 worker       claims, evaluator run, scoring, generating, reaper (leaderboard/worker/)
    4 adapters     Celery tasks, views, API, admin, management commands, urls, settings, middleware
                   (security headers, the upload gate), throttles

Imports of ``evaluator.*`` are not leaderboard layers (the evaluator sits below all of them).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "leaderboard"

LAYERS = {
    0: ("leaderboard", "leaderboard.models", "leaderboard.env", "leaderboard.cache", "leaderboard.crypto",
        "leaderboard.secrecy", "leaderboard.storage", "leaderboard.checks", "leaderboard.celery", "leaderboard.health",
        "leaderboard.websettings"),
    1: ("leaderboard.access", "leaderboard.quotas", "leaderboard.tasksets", "leaderboard.ranking",
        "leaderboard.exports", "leaderboard.charts", "leaderboard.notifications", "leaderboard.previews",
        "leaderboard.board_pages", "leaderboard.accounts", "leaderboard.heldout", "leaderboard.serving",
        "leaderboard.mail", "leaderboard.official", "leaderboard.agreement"),
    2: ("leaderboard.intake",),
    3: ("leaderboard.worker",),
    4: ("leaderboard.tasks", "leaderboard.views", "leaderboard.api", "leaderboard.admin", "leaderboard.management",
        "leaderboard.urls", "leaderboard.settings", "leaderboard.wsgi", "leaderboard.apps",
        "leaderboard.context_processors", "leaderboard.migrations", "leaderboard.security", "leaderboard.uploads",
        "leaderboard.throttles"),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_package() -> dict[str, tuple[str, bool]]:
    """Module name -> (source, whether it is a package's ``__init__``) for every file of leaderboard/."""
    return {module_name(path): (path.read_text(encoding="utf-8"), path.name == "__init__.py")
            for path in sorted(PACKAGE.rglob("*.py"))}


def layer_of(name: str) -> int | None:
    """The layer of the longest prefix of ``name`` listed in LAYERS (None: not listed). The package
    itself ("leaderboard") is no prefix: every module below it needs a room of its own."""
    best, found = -1, None
    for layer, prefixes in LAYERS.items():
        for prefix in prefixes:
            inside = name.startswith(prefix + ".") and prefix != "leaderboard"
            if (name == prefix or inside) and len(prefix) > best:
                best, found = len(prefix), layer
    return found


def imports_of(name: str, modules: dict) -> list[tuple[str, int]]:
    """(leaderboard module imported, line) for every import in module ``name``, at any depth."""
    source, is_package = modules[name]
    package = name if is_package else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package of this module
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                target = f"{base}.{alias.name}"  # "from leaderboard import ranking" names a module
                found.append((target if target in modules else base, node.lineno))
    return [(target, line) for target, line in found if target == "leaderboard" or target.startswith("leaderboard.")]


def upward_imports(modules: dict) -> list[str]:
    """Every import of a higher layer, named with its module, line and both layers."""
    offenders = []
    for name in modules:
        for target, line in imports_of(name, modules):
            if layer_of(target) is not None and layer_of(name) is not None and layer_of(target) > layer_of(name):
                offenders.append(f"{name}:{line} (layer {layer_of(name)}) imports {target} (layer {layer_of(target)})")
    return offenders


def circles(modules: dict) -> list[str]:
    """Every cycle of the import graph met by a depth-first walk, as "a -> b -> a"."""
    edges = {name: sorted({target for target, _ in imports_of(name, modules) if target != name}) for name in modules}
    found, state = [], {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = "open"
        for target in edges[name]:
            if state.get(target) == "open":
                found.append(" -> ".join([*trail[trail.index(target):], target]))
            elif target in edges and target not in state:
                visit(target, [*trail, target])
        state[name] = "done"

    for name in edges:
        if name not in state:
            visit(name, [name])
    return found


def test_every_leaderboard_module_has_a_layer():
    """A new module must be given its room: anything unlisted fails here, by name."""
    assert [name for name in read_package() if layer_of(name) is None] == []


def test_no_module_imports_from_a_higher_layer():
    """Every import, at module top or inside a function, goes to the same layer or below."""
    assert upward_imports(read_package()) == []


def test_no_modules_import_each_other_in_a_circle():
    """The import graph of leaderboard/ has no cycle, not even one hidden inside functions."""
    assert circles(read_package()) == []


def test_the_scan_names_an_upward_import_inside_a_function_and_a_circle():
    """A worker module warming a view's cache from inside a function, and two modules importing each
    other, are both caught and named."""
    modules = {
        "leaderboard.worker.scoring": ("def warm():\n    from leaderboard.views import rankings\n", False),
        "leaderboard.views.rankings": ("", False),
        "leaderboard.access": ("from leaderboard import quotas\n", False),
        "leaderboard.quotas": ("import leaderboard.access\n", False),
    }
    upward = "leaderboard.worker.scoring:2 (layer 3) imports leaderboard.views.rankings (layer 4)"
    assert upward_imports(modules) == [upward]
    assert circles(modules) == ["leaderboard.access -> leaderboard.quotas -> leaderboard.access"]
