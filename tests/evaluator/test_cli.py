"""The evaluator's command line works on its own, without Django on the path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BLOCK_DJANGO = "import sys; sys.modules['django'] = None; from evaluator.cli import main; sys.exit(main(sys.argv[1:]))"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK_DJANGO, *args], cwd=ROOT, capture_output=True, text=True)


def test_help_works_without_django():
    """`python -m evaluator --help` lists the subcommands even when Django cannot be imported."""
    result = run("--help")
    assert result.returncode == 0, result.stderr
    assert "usage: python -m evaluator" in result.stdout
    assert "score" in result.stdout


def test_version_names_the_evaluator_version():
    """--version prints the evaluator version that every score carries."""
    import evaluator

    result = run("--version")
    assert result.stdout.strip() == f"iwr-bench evaluator {evaluator.__version__}"


def test_module_entry_point_runs():
    """`python -m evaluator` itself (not only the function) starts and prints help."""
    result = subprocess.run([sys.executable, "-m", "evaluator", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0 and "COMMAND" in result.stdout


def test_unknown_subcommand_is_a_usage_error():
    """An unknown subcommand exits 2 with argparse's message, not a traceback."""
    result = run("frobnicate")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr and "Traceback" not in result.stderr


def test_a_command_imports_only_what_it_needs():
    """`score` starts every scoring job: it must not pay for the generate command's HTTP client and TLS."""
    probe = ("import sys; from evaluator.cli import build_parser; "
             "args = build_parser('score').parse_args(['score', '--data', 'd', '--bundle', 'b', '--out', 'o']); "
             "heavy = ('evaluator.generation', 'ssl', 'http.client'); "
             "print(args.command, sorted(m for m in heavy if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split(maxsplit=1) == ["score", "[]\n"]


def test_every_command_still_parses_by_its_own_name():
    """Registering one command at a time keeps each command's own options and help (ocr-cache included)."""
    for name in ("score", "ocr-cache", "generate", "validate"):
        result = run(name, "--help")
        assert result.returncode == 0, result.stderr
        assert f"usage: python -m evaluator {name}" in result.stdout


def test_check_bundle_reports_layout_pages_missing_and_ignored(tmp_path):
    """The dry run names the layout, the tasks with and without a page and the foreign folders; --json too."""
    import json
    import zipfile

    from tests.evaluator.fixtures.dataset_builder import build_dataset, record

    data = build_dataset(tmp_path / "set", [record(1), record("todo-b"), record(3)])
    bundle = tmp_path / "outputs.zip"
    with zipfile.ZipFile(bundle, "w") as zf:
        for key in ("1", "todo-b", "other"):
            zf.writestr(f"outputs/{key}/gpt-5/index.html", "<!doctype html><p>hi</p>")
    text = run("check-bundle", "--data", str(data), "--bundle", str(bundle))
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == [
        "layout: nested: <task id>/<model folder>/index.html (model folder gpt-5/) inside outputs/",
        "pages: 2 of 3 task(s) (1, todo-b)", "no page (would score 0): 3", "ignored (no such task): other",
        "warning: every file was inside the folder outputs/, which was read as the bundle root",
        "accepted: scoring would take this bundle"]
    machine = run("check-bundle", "--data", str(data), "--bundle", str(bundle), "--tasks", "1,3", "--json")
    report = json.loads(machine.stdout)
    assert (report["accepted"], report["pages"], report["missing"]) == (True, ["1"], ["3"])
    assert report["ignored"] == ["other", "todo-b"] and report["layout"]["kind"] == "nested"
    with zipfile.ZipFile(bundle, "a") as zf:
        zf.writestr("outputs/1/o4/index.html", "<p>second model</p>")
    refused = run("check-bundle", "--data", str(data), "--bundle", str(bundle), "--json")
    assert refused.returncode == 1
    assert "1/gpt-5/, 1/o4/" in json.loads(refused.stdout)["problems"][0]
    assert run("check-bundle", "--data", str(data), "--bundle", str(bundle), "--tasks", "9").returncode == 2
