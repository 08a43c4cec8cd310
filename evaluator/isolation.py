"""What a scoring job may see: its environment and its files, each an allow-list with a reason per entry.

A job runs untrusted pages. Whatever is in the memory or the file system of any of its processes
(bubblewrap, the evaluator, its workers, Playwright's driver, Chromium) must be assumed readable by
a page that finds a renderer bug. So nothing is inherited: the environment is built here from
:data:`FIXED_ENV` and the few :data:`PASSED_ENV` settings, and the file system from
:data:`SYSTEM_PATHS`, the Python interpreter and this evaluator's code (:func:`runtime_paths`).
Used by :mod:`evaluator.sandbox` (bubblewrap), :mod:`evaluator.browser` (Chromium's own
environment) and :mod:`evaluator.container` (``docker run`` passes only these).
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path

EVALUATOR_DIR = Path(__file__).resolve().parent  # the evaluator package: the only code a job needs
REPO_ROOT = EVALUATOR_DIR.parent
PATH = "/usr/local/bin:/usr/bin:/bin"

# Set to these values in every job, whatever the caller has.
FIXED_ENV: dict[str, tuple[str, str]] = {
    "PATH": (PATH, "finds setpriv, tesseract and ffmpeg; the system's directories only"),
    "LANG": ("C.UTF-8", "text I/O and Chromium's font fallback do not depend on the host's locale"),
    "LC_ALL": ("C.UTF-8", "as LANG, over any LC_* of the host"),
    "TZ": ("UTC", "pages render dates the same on every host (the page context says UTC too)"),
    "OMP_THREAD_LIMIT": ("1", "one Tesseract thread per worker: workers are the unit of parallelism"),
    "PYTHONDONTWRITEBYTECODE": ("1", "the evaluator's code is read-only inside the job"),
    "PYTHONUNBUFFERED": ("1", "the job's log reaches the caller as it is written"),
}
# Taken from the caller when set: the evaluator's own job settings, none of them secret.
PASSED_ENV: dict[str, str] = {
    "IWR_CHROMIUM": "which Chromium binary scores (a path)",
    "PLAYWRIGHT_BROWSERS_PATH": "where Playwright finds its ffmpeg link for videos (a path)",
    "NODE_COMPILE_CACHE": "Playwright driver's compiled JavaScript, read-only (a path)",
    "TESSDATA_PREFIX": "Tesseract's language data (a path)",
    "OMP_NUM_THREADS": "thread limit of numerical libraries",
    "OPENBLAS_NUM_THREADS": "thread limit of numerical libraries",
    "MKL_NUM_THREADS": "thread limit of numerical libraries",
}
# Set by the launcher for this very job: HOME and TMPDIR private to it, PYTHONPATH to this evaluator.
JOB_ENV = ("HOME", "TMPDIR", "PYTHONPATH", "IWR_SANDBOX_ACTIVE")
# Chromium needs even less: no Python, no evaluator settings.
BROWSER_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "HOME", "TMPDIR")

# A value that carries a credential is never passed, whatever its name: a URL with a password in it.
_CREDENTIAL_URL = re.compile(r"://[^/@\s]*:[^/@\s]*@")
_SECRET_NAME = re.compile(r"SECRET|PASSW|TOKEN|KEY|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)


class IsolationError(ValueError):
    """A job's environment or files would include something secret; the message says which rule."""


def job_environment(home: str, tmpdir: str, sandbox: str, source: Mapping[str, str] | None = None,
                    extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a job's processes: fixed values, allowed settings of ``source``, job paths.

    ``extra``: settings the caller wants the job to have; only names on the allow-lists are taken
    (anything else in it, e.g. a copy of ``os.environ``, is dropped, not passed).
    """
    source = os.environ if source is None else source
    env = {name: value for name, (value, _why) in FIXED_ENV.items()}
    for mapping in (source, extra or {}):
        env.update({name: value for name, value in mapping.items() if name in PASSED_ENV and safe_value(value)})
    env.update({"HOME": home, "TMPDIR": tmpdir, "PYTHONPATH": str(REPO_ROOT), "IWR_SANDBOX_ACTIVE": sandbox})
    check_environment(env)
    return env


# What the scoring command itself (the launcher, outside the sandbox) reads besides the job's settings.
LAUNCHER_ENV: dict[str, str] = {
    "IWR_SANDBOX": "which sandbox backend the score command uses",
    "IWR_ALLOW_UNSANDBOXED": "development only: permits the unsandboxed backend",
    "DOCKER_HOST": "the container engine the container backend talks to (an address, not a credential)",
}


def launcher_environment(tmpdir: str, source: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment to start ``python -m evaluator score`` with: the job's allow-list plus
    :data:`LAUNCHER_ENV`, with HOME and TMPDIR at ``tmpdir``; nothing secret of the caller's.

    The launcher runs outside the sandbox (it checks the inputs and fills the OCR cache), but it
    reads the untrusted bundle, so it holds no secret either.
    """
    source = os.environ if source is None else source
    env = job_environment(tmpdir, tmpdir, "", source=source)
    del env["IWR_SANDBOX_ACTIVE"]  # set by the sandbox for the job itself: the launcher must not skip it
    env.update({name: source[name] for name in LAUNCHER_ENV if name in source and safe_value(source[name])})
    return env


def browser_environment(home: str, tmpdir: str) -> dict[str, str]:
    """Chromium's environment: locale, timezone, PATH and its own private HOME and TMPDIR."""
    env = {name: value for name, (value, _why) in FIXED_ENV.items() if name in BROWSER_ENV}
    return {**env, "HOME": home, "TMPDIR": tmpdir}


def safe_value(value: str) -> bool:
    return not _CREDENTIAL_URL.search(str(value))


def check_environment(env: Mapping[str, str]) -> None:
    """Raise IsolationError when a name is off the allow-lists, looks secret, or a value holds a credential."""
    allowed = set(FIXED_ENV) | set(PASSED_ENV) | set(JOB_ENV) | set(LAUNCHER_ENV)
    for name, value in env.items():
        if name not in allowed:
            raise IsolationError(f"environment variable {name} is not on the job's allow-list")
        if _SECRET_NAME.search(name):
            raise IsolationError(f"environment variable {name} is named like a secret")
        if not safe_value(value):
            raise IsolationError(f"environment variable {name} holds a URL with a password")


# --------------------------------------------------------------------------- files

# Read-only system paths a job needs, and why. Missing ones are skipped (other distributions);
# on merged-/usr systems /bin, /sbin and /lib* are symlinks into /usr and are recreated as such.
SYSTEM_PATHS: dict[str, str] = {
    "/usr": "programs and libraries: Python's C dependencies, Chromium, Tesseract, ffmpeg, setpriv, fonts",
    "/bin": "the shell that runs Chromium's wrapper script (usually a link into /usr)",
    "/sbin": "a link into /usr on merged-/usr systems",
    "/lib": "shared libraries (usually a link into /usr)",
    "/lib64": "the dynamic loader /lib64/ld-linux-x86-64.so.2",
    "/lib32": "32-bit libraries where installed",
    "/libx32": "x32 libraries where installed",
    "/etc/ld.so.cache": "the dynamic loader's index of shared libraries",
    "/etc/fonts": "fontconfig's configuration: which fonts render and how (pixels depend on it)",
    "/var/cache/fontconfig": "fontconfig's prebuilt cache: without it each Chromium scans every font",
    "/etc/alternatives": "Debian's links behind some /usr/bin commands",
    "/etc/mime.types": "content types of the bundle's files as served to the page",
}


def python_paths() -> list[Path]:
    """The interpreter's own files: its virtualenv, its standard library and its shared library.

    The base installation may live under a home folder (e.g. pyenv under /root): only these
    folders of it are needed, not the home folder itself.
    """
    paths = [Path(sys.prefix), Path(sys.executable), Path(sysconfig.get_paths()["stdlib"])]
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        library = Path(sysconfig.get_config_var("LIBDIR") or "") / str(sysconfig.get_config_var("INSTSONAME") or "")
        if library.name and library.exists():
            paths.append(library)
    platstdlib = Path(sysconfig.get_paths()["platstdlib"])
    if platstdlib.exists():
        paths.append(platstdlib)
    return paths


def runtime_paths() -> list[Path]:
    """Everything a job reads besides the system and its inputs: Python and this evaluator's package.

    The caches Playwright's driver reads (compiled JavaScript, the ffmpeg link for videos) are
    included when they exist; nothing else of the checkout is (no ``var/``, no settings).
    """
    from evaluator.browser import driver_settings

    return [*python_paths(), EVALUATOR_DIR, *(Path(path) for path in driver_settings().values())]


class BindPlan:
    """bubblewrap arguments that make paths visible at the same place, through the same symlinks.

    A symlink on the way (``.venv`` pointing at another checkout, ``/lib`` at ``/usr/lib``) is
    recreated as a symlink and its target bound, so paths the job was given keep working and
    nothing beside them appears. A symlink inside a folder bound already is there already.
    """

    def __init__(self):
        self.args: list[str] = []
        self.bound: list[Path] = []
        self.links: set[str] = set()
        self.read_only: list[Path] = []
        self.folders: set[str] = set()

    def add(self, path: Path, how: str = "--ro-bind") -> None:
        path = Path(os.path.abspath(path))
        current = Path("/")
        for part in path.parts[1:]:
            nxt = current / part
            if nxt.is_symlink():
                self._link(nxt, current)
                # One link at a time: the target may itself be a link the job needs (python3 -> python3.11).
                target = Path(os.path.normpath(current / os.readlink(nxt)))
                self.add(target / path.relative_to(nxt), how)
                return
            current = nxt
        if how == "--ro-bind" and any(current == d or d in current.parents for d in self.read_only):
            return
        self._parents(current)
        self.args += [how, str(current), str(current)]
        self.bound.append(current)
        if how == "--ro-bind":
            self.read_only.append(current)

    def _parents(self, path: Path) -> None:
        """Create the folders above a mount point traversable by everyone (bubblewrap would make them 0700,
        and Chromium's user could not reach /etc/fonts); they hold nothing but what is mounted."""
        for parent in reversed(path.parents[:-1]):
            if str(parent) not in self.folders and not self.covers(parent):
                self.folders.add(str(parent))
                self.args += ["--perms", "0755", "--dir", str(parent)]

    def link(self, path: Path) -> None:
        """Recreate the symlink ``path`` alone (its target is bound some other way)."""
        self._link(Path(path), Path(path).parent)

    def _link(self, link: Path, parent: Path) -> None:
        if str(link) in self.links or self.covers(parent):
            return
        self._parents(link)
        self.links.add(str(link))
        self.args += ["--symlink", os.readlink(link), str(link)]

    def covers(self, path: Path) -> bool:
        return any(path == folder or folder in path.parents for folder in self.bound)


def bind_order(mounts: list[tuple[Path, str]], plan: BindPlan | None = None) -> BindPlan:
    """Add several mounts: outer folders first, so the deepest folder's mode wins for what it holds."""
    plan = plan or BindPlan()
    for path, how in sorted(mounts, key=lambda mount: len(Path(mount[0]).resolve().parts)):
        plan.add(path, how)
    return plan


def system_plan() -> BindPlan:
    """The :data:`SYSTEM_PATHS` that exist here, read-only; top-level links into /usr stay links."""
    plan = BindPlan()
    for name in SYSTEM_PATHS:
        path = Path(name)
        if path.is_symlink() and Path("/usr") in path.resolve().parents:
            plan.link(path)
        elif path.exists():
            plan.add(path)
    return plan


def minimal_passwd(users: Mapping[str, tuple[int, int]]) -> tuple[str, str]:
    """``/etc/passwd`` and ``/etc/group`` naming only the users a job runs as (no host accounts).

    ``users`` maps a name to its uid and primary gid; each gid gets a group of the user's name.
    """
    passwd = "".join(f"{name}:x:{uid}:{gid}::/nonexistent:/usr/sbin/nologin\n" for name, (uid, gid) in users.items())
    groups = {gid: name for name, (_uid, gid) in reversed(list(users.items()))}
    group = "".join(f"{name}:x:{gid}:\n" for gid, name in groups.items())
    return passwd, group
