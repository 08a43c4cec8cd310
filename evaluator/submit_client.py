#!/usr/bin/env python3
"""Command-line client of the IWR-Bench leaderboard API. One file, Python 3.10+ standard library only.

    iwr-submit check BUNDLE.zip --split dev       dry run: which tasks have a page (no quota spent)
    iwr-submit submit BUNDLE.zip --split dev --model-name NAME [--wait] [more fields]
    iwr-submit endpoint --split dev --model-name NAME --base-url URL --model-id ID [--wait]
    iwr-submit status ID [--wait]      progress bar until the submission is scored or failed
    iwr-submit list                    your submissions
    iwr-submit quota                   submissions left today per split
    iwr-submit download ID [-o FILE]   results as JSON (held-out split: scores only)

The site and your API token (from your account page) come from --url/--token or the
environment variables IWR_URL and IWR_TOKEN; --json prints the site's answers as JSON.
Polls and uploads are retried with back-off when the site is busy or briefly away (HTTP 429,
502, 503, 504, dropped connections), honouring Retry-After; a wait goes on until its own
time limit. Exit status: 0 done, 1 the server refused or the submission failed, 2 bad usage
or the server could not be reached.

This file is the whole client: copy it anywhere and run it with python3. It is also
installed as the ``iwr-submit`` command by ``pip install`` of the evaluator package.
"""

from __future__ import annotations

import argparse
import email.utils
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

__version__ = "1.0.0"

FINISHED = ("scored", "failed", "cancelled")
GENERATION_FINISHED = ("done", "failed", "cancelled")
TRANSIENT = frozenset({429, 502, 503, 504})
FIELDS = ("split", "model_name", "protocol", "organisation", "model_size", "paper_url", "code_url", "description")
ENDPOINT_FIELDS = ("split", "model_name", "protocol", "base_url", "model_id", "max_tokens", "max_images",
                   "max_frames", "length_parameter", "organisation", "model_size", "paper_url", "code_url",
                   "description")
MAX_RETRY_AFTER = 900.0  # a Retry-After longer than this is a misconfiguration, not a plan


class ClientError(Exception):
    """Something the user must fix or know; printed as one line (exit 1, or 2 for usage)."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


class _Transient(Exception):
    """Worth trying again: the site is busy, restarting, or the connection dropped."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


# --------------------------------------------------------------------------- HTTP


class Api:
    """The site's API with retries: ``retries`` extra attempts, or until ``until`` (monotonic) while waiting."""

    def __init__(self, url: str, token: str, timeout: float = 120.0, retries: int = 5, base_wait: float = 1.0,
                 max_wait: float = 60.0, sleep=time.sleep):
        if not url.startswith(("http://", "https://")):
            raise ClientError(f"--url must start with http:// or https:// (got {url!r})", code=2)
        self.base = url.rstrip("/") + "/api/v1/"
        self.token, self.timeout = token, timeout
        self.retries, self.base_wait, self.max_wait, self.sleep = retries, base_wait, max_wait, sleep
        self.reached = False  # a site never reached at all is a wrong URL: no point retrying then

    def request(self, method: str, path: str, body=None, headers: dict | None = None, until: float | None = None):
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._once(method, path, body, headers)
            except _Transient as exc:
                wait = self._wait(exc, attempt)
                waiting = until is not None and time.monotonic() + wait < until
                if not waiting and attempt > self.retries:
                    raise ClientError(f"{exc}; gave up after {attempt} attempts", code=2) from None
                say(f"{exc}; trying again in {wait:.0f} s")
                self.sleep(wait)
                if hasattr(body, "seek"):
                    body.seek(0)

    def _wait(self, exc: _Transient, attempt: int) -> float:
        if exc.retry_after is not None:  # honoured, within reason (0 would poll as fast as the site answers)
            return min(max(exc.retry_after, self.base_wait / 2), MAX_RETRY_AFTER)
        return min(self.max_wait, self.base_wait * 2 ** (attempt - 1))

    def _once(self, method: str, path: str, body, headers: dict | None):
        headers = {"Authorization": f"Token {self.token}", "Accept": "application/json",
                   "User-Agent": f"iwr-submit/{__version__}", **(headers or {})}
        request = urllib.request.Request(  # noqa: S310 - the scheme was checked to be http(s)
            self.base + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 - http(s) only
                self.reached = True
                return json.loads(response.read().decode("utf-8") or "null")
        except urllib.error.HTTPError as exc:
            self.reached = True
            if exc.code in TRANSIENT:
                raise _Transient(f"the site answered {exc.code} ({exc.reason})",
                                 parse_retry_after(exc.headers.get("Retry-After"))) from None
            raise ClientError(f"the server refused ({exc.code}): {describe_error(exc)}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            if not self.reached:
                raise ClientError(f"cannot reach {self.base}: {reason}", code=2) from None
            raise _Transient(f"lost the connection to {self.base} ({reason})") from None

    def get(self, path: str, until: float | None = None):
        return self.request("GET", path, until=until)

    def post(self, path: str, body=None, headers=None):
        return self.request("POST", path, body, headers)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (seconds or an HTTP date), or None."""
    if not value:
        return None
    try:
        return max(0.0, float(value.strip()))
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def describe_error(exc: urllib.error.HTTPError) -> str:
    """The server's explanation: every field problem on its own line."""
    raw = exc.read().decode("utf-8", "replace")
    try:
        data = json.loads(raw)
    except ValueError:
        return raw.strip()[:300] or exc.reason
    if isinstance(data, dict) and "detail" in data:
        return str(data["detail"])
    if isinstance(data, dict):
        lines = [f"{field}: {message}" for field, messages in data.items()
                 for message in (messages if isinstance(messages, list) else [messages])]
        return "\n  " + "\n  ".join(lines)
    return str(data)


def multipart(fields: dict, file_field: str, path: Path):
    """A multipart body spooled to a temporary file (bundles can be large): (file, length, content type)."""
    boundary = uuid.uuid4().hex
    spool = tempfile.TemporaryFile()
    for name, value in fields.items():
        spool.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    spool.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; '
                f'filename="{path.name}"\r\nContent-Type: application/zip\r\n\r\n'.encode())
    with open(path, "rb") as source:
        shutil.copyfileobj(source, spool)
    spool.write(f"\r\n--{boundary}--\r\n".encode())
    length = spool.tell()
    spool.seek(0)
    return spool, length, f"multipart/form-data; boundary={boundary}"


class Progress:
    """A file whose reads draw an upload bar on a terminal (http.client sends a body by reading it)."""

    def __init__(self, file, total: int, label: str, stream=None):
        self.file, self.total, self.label = file, total, label
        self.stream = stream or sys.stderr
        self.show = self.stream.isatty()
        self.sent = 0

    def read(self, size: int = -1) -> bytes:
        data = self.file.read(size)
        self.sent += len(data)
        if self.show:
            share = self.sent / self.total if self.total else 1.0
            bar = "#" * int(30 * share)
            self.stream.write(f"\ruploading {self.label} [{bar:<30}] {100 * share:5.1f}% "
                              f"of {self.total / 1048576:.1f} MB")
            if not data or self.sent >= self.total:
                self.stream.write("\n")
            self.stream.flush()
        return data

    def seek(self, offset: int) -> None:
        self.file.seek(offset)
        self.sent = offset


def upload(api: Api, path: str, fields: dict, bundle: Path) -> dict:
    body, length, content_type = multipart(fields, "bundle", bundle)
    say(f"uploading {bundle.name} ({length / 1048576:.1f} MB)...")
    # One key for every attempt of this upload: a retried upload the site already took is not taken twice.
    headers = {"Content-Type": content_type, "Content-Length": str(length), "Idempotency-Key": uuid.uuid4().hex}
    with body:
        return api.post(path, Progress(body, length, bundle.name), headers)


# --------------------------------------------------------------------------- output


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def emit(args, document, lines: list[str]) -> None:
    """The site's answer as JSON (--json) or as lines for a person."""
    print(json.dumps(document, indent=1) if args.json else "\n".join(lines))


def percent(value) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def progress_line(state: dict, width: int = 30) -> str:
    done, total = state["progress"]["tasks_done"], state["progress"]["tasks_total"]
    filled = int(width * done / total) if total else 0
    return f"\r#{state['id']} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} tasks  {state['status']:<9}"


def summary_lines(state: dict) -> list[str]:
    protocol = state.get("evaluation_protocol", state["protocol"])
    lines = [f"#{state['id']} {state['model_name']} ({state['split']}, {protocol}): {state['status']}"]
    if state.get("scores"):
        scores = state["scores"]
        lines.append(f"  Final {percent(scores['final'])}  IFS {percent(scores['ifs'])}  VFS {percent(scores['vfs'])}"
                     f"  (95% CI of Final {percent(scores.get('final_ci_low'))}-{percent(scores.get('final_ci_high'))},"
                     f" {scores.get('n_tasks')} tasks)")
    if state.get("failure"):
        lines.append(f"  {state['failure']['kind_label']}: {state['failure']['reason']}")
    return lines


def check_lines(report: dict) -> list[str]:
    layout = report.get("layout") or {}
    lines = [f"layout: {layout['kind']}" + (f" (model folder {', '.join(layout['model_folders'])})"
                                           if layout.get("model_folders") else "")] if layout else []
    lines.append(f"pages: {len(report.get('pages', []))} of {report.get('tasks', '?')} task(s)")
    if report.get("missing"):
        lines.append(f"no page (would score 0): {', '.join(report['missing'])}")
    if report.get("ignored"):
        lines.append(f"ignored (no such task): {', '.join(report['ignored'])}")
    lines += [f"warning: {warning}" for warning in report.get("warnings", [])]
    if report.get("accepted"):
        return [*lines, "accepted: the site would take this bundle (nothing was stored, no quota spent)"]
    return [*lines, "rejected:", *[f"  {problem}" for problem in report.get("problems", [])]]


# --------------------------------------------------------------------------- commands


def bundle_fields(args) -> tuple[Path, dict]:
    bundle = Path(args.bundle)
    if not bundle.is_file():
        raise ClientError(f"{bundle}: no such file", code=2)
    fields = {name: getattr(args, name) for name in FIELDS if getattr(args, name, None)}
    fields["open_weights"] = "true" if args.open_weights else "false"
    fields["public"] = "false" if args.private else "true"
    return bundle, fields


def cmd_check(api: Api, args) -> int:
    bundle, fields = bundle_fields(args)
    try:
        report = upload(api, "bundles/check/", fields, bundle)
    except ClientError as exc:
        if "refused (404)" in str(exc) or "refused (405)" in str(exc):
            raise ClientError("this site cannot check bundles yet; check locally with "
                              "python -m evaluator check-bundle --data DATA.jsonl --bundle BUNDLE") from None
        raise
    emit(args, report, check_lines(report))
    return 0 if report.get("accepted") else 1


def cmd_submit(api: Api, args) -> int:
    bundle, fields = bundle_fields(args)
    created = upload(api, "submissions/", fields, bundle)
    if args.json and not args.wait:
        emit(args, created, [])
        return 0
    print(f"submission #{created['id']} accepted: {created['status']}")
    for note in created.get("notes", []):
        print(f"  note: {note}")
    return wait(api, args, created["id"]) if args.wait else 0


def cmd_endpoint(api: Api, args) -> int:
    """Submit a model endpoint: the site generates the pages, then scores them."""
    fields = {name: getattr(args, name) for name in ENDPOINT_FIELDS if getattr(args, name, None) not in (None, "")}
    key = os.environ.get(args.api_key_env, "").strip() if args.api_key_env else ""
    if args.api_key_env and args.api_key_env not in os.environ:
        raise ClientError(f"environment variable {args.api_key_env} is not set", code=2)
    if key:
        fields["api_key"] = key
    fields.update(open_weights=args.open_weights, public=not args.private)
    if args.default_temperature:
        fields["default_temperature"] = True
    body = json.dumps(fields).encode("utf-8")
    created = api.post("endpoint-submissions/", body, {"Content-Type": "application/json",
                                                       "Idempotency-Key": uuid.uuid4().hex})
    if args.json and not args.wait:
        emit(args, created, [])
        return 0
    print(f"endpoint submission #{created['id']} accepted: generation {created['generation']['status']}")
    return wait_generation(api, args, created["id"]) if args.wait else 0


def wait_generation(api: Api, args, submission_id: int) -> int:
    until = time.monotonic() + args.wait_limit
    while True:
        state = api.get(f"endpoint-submissions/{submission_id}/", until=until)
        generation = state["generation"]
        sys.stderr.write(f"\r#{submission_id} generating {generation['tasks_done']}/{generation['tasks_total']} "
                         f"pages  {generation['status']:<9}")
        sys.stderr.flush()
        if generation["status"] in GENERATION_FINISHED:
            sys.stderr.write("\n")
            if generation["status"] != "done":
                emit(args, state, [f"#{submission_id}: generation {generation['status']}: "
                                   f"{generation.get('failure_reason') or ''}".rstrip(": ")])
                return 1
            return wait(api, args, submission_id, until)
        if time.monotonic() >= until:
            raise ClientError(f"still generating after {args.wait_limit:g} s; follow it with status {submission_id}")
        time.sleep(args.poll)


def cmd_status(api: Api, args) -> int:
    if args.wait:
        return wait(api, args, args.id)
    state = api.get(f"submissions/{args.id}/")
    emit(args, state, summary_lines(state))
    return 1 if state["status"] == "failed" else 0


def wait(api: Api, args, submission_id: int, until: float | None = None) -> int:
    """Poll until the submission ends; busy or restarting sites are retried until the wait's own limit."""
    until = until or time.monotonic() + args.wait_limit
    while True:
        state = api.get(f"submissions/{submission_id}/", until=until)
        sys.stderr.write(progress_line(state))
        sys.stderr.flush()
        if state["status"] in FINISHED:
            sys.stderr.write("\n")
            emit(args, state, summary_lines(state))
            return 0 if state["status"] == "scored" else 1
        if time.monotonic() >= until:
            raise ClientError(f"not finished after {args.wait_limit:g} s; follow it with status {submission_id}")
        time.sleep(args.poll)


def cmd_list(api: Api, args) -> int:
    data = api.get("submissions/")
    rows = data["results"] if isinstance(data, dict) and "results" in data else data
    lines = [] if rows else ["no submissions yet"]
    for state in rows:
        scores = state.get("scores") or {}
        lines.append(f"#{state['id']:<6} {state['status']:<9} {state['split']:<4} "
                     f"Final {percent(scores.get('final')):>6}  {state['model_name']}")
    emit(args, data, lines)
    return 0


def cmd_quota(api: Api, args) -> int:
    data = api.get("quota/")
    emit(args, data, [f"{quota['split']:<4} {quota['remaining']} of {quota['limit']} left today "
                      f"(resets {quota['resets_at']})" for quota in data["quotas"]])
    return 0


def cmd_download(api: Api, args) -> int:
    document = api.get(f"submissions/{args.id}/results/")
    out = Path(args.output or f"submission-{args.id}-results.json")
    out.write_text(json.dumps(document, indent=1))
    emit(args, {"written": str(out)}, [f"wrote {out}"])
    return 0


# --------------------------------------------------------------------------- arguments


def _entry_options(parser: argparse.ArgumentParser, model_name_required: bool = True) -> None:
    parser.add_argument("--split", required=True, choices=("dev", "test"))
    parser.add_argument("--model-name", dest="model_name", required=model_name_required)
    parser.add_argument("--protocol", default="iwr-det", help="scoring protocol (default iwr-det)")
    for name in ("organisation", "model_size", "paper_url", "code_url", "description"):
        parser.add_argument("--" + name.replace("_", "-"), dest=name, default="")
    parser.add_argument("--open-weights", action="store_true")
    parser.add_argument("--private", action="store_true", help="keep it off the public leaderboard")


def _wait_options(parser: argparse.ArgumentParser, flag: bool = True) -> None:
    if flag:
        parser.add_argument("--wait", action="store_true", help="follow it until it ends")
    parser.add_argument("--wait-limit", type=float, default=3600.0, metavar="SECONDS",
                        help="give up waiting after this long (default 3600)")
    parser.add_argument("--poll", type=float, default=3.0, metavar="SECONDS", help="seconds between polls")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="iwr-submit", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"iwr-submit {__version__}")
    parser.add_argument("--url", default=os.environ.get("IWR_URL"), help="site URL (default: $IWR_URL)")
    parser.add_argument("--token", default=os.environ.get("IWR_TOKEN"), help="API token (default: $IWR_TOKEN)")
    parser.add_argument("--json", action="store_true", help="print the site's answers as JSON")
    parser.add_argument("--retries", type=int, default=5, help="extra attempts when the site is busy (default 5)")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="dry run: check a bundle against a split (no quota spent)")
    check.add_argument("bundle", help="the .zip with <task id>/index.html per task")
    _entry_options(check, model_name_required=False)
    check.set_defaults(func=cmd_check)
    submit = commands.add_parser("submit", help="upload a bundle")
    submit.add_argument("bundle", help="the .zip with <task id>/index.html per task")
    _entry_options(submit)
    _wait_options(submit)
    submit.set_defaults(func=cmd_submit)
    endpoint = commands.add_parser("endpoint", help="submit a model endpoint; the site generates the pages")
    _entry_options(endpoint)
    endpoint.add_argument("--base-url", required=True, help="OpenAI-compatible base URL, e.g. https://host/v1")
    endpoint.add_argument("--model-id", required=True, help="model id sent with each request")
    endpoint.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="NAME",
                          help="environment variable holding the endpoint's key (default OPENAI_API_KEY; "
                               "empty name: no key)")
    for name in ("max_tokens", "max_images", "max_frames"):
        endpoint.add_argument("--" + name.replace("_", "-"), dest=name, type=int, default=None)
    endpoint.add_argument("--default-temperature", action="store_true",
                          help="the model runs at its default temperature (reasoning models refuse 0)")
    endpoint.add_argument("--length-parameter", choices=("max_tokens", "max_completion_tokens"), default=None)
    _wait_options(endpoint)
    endpoint.set_defaults(func=cmd_endpoint)
    status = commands.add_parser("status", help="state of a submission")
    status.add_argument("id", type=int)
    _wait_options(status)
    status.set_defaults(func=cmd_status)
    commands.add_parser("list", help="your submissions").set_defaults(func=cmd_list)
    commands.add_parser("quota", help="submissions left today").set_defaults(func=cmd_quota)
    download = commands.add_parser("download", help="download results as JSON")
    download.add_argument("id", type=int)
    download.add_argument("-o", "--output", help="file to write (default: submission-ID-results.json)")
    download.set_defaults(func=cmd_download)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if not args.url or not args.token:
            raise ClientError("set the site and your token: --url/--token or IWR_URL/IWR_TOKEN", code=2)
        return args.func(Api(args.url, args.token, retries=max(0, args.retries)), args)
    except ClientError as exc:
        print(f"\nerror: {exc}" if getattr(args, "wait", False) else f"error: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
