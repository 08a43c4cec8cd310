"""SciPy's ``linear_sum_assignment`` (the Hungarian step of block matching), loaded on its own.

``from scipy.optimize import linear_sum_assignment`` first imports all of ``scipy.optimize``
(linear programming, HiGHS, sparse linear algebra, spatial transforms): a quarter of a second
of CPU in every scoring worker, for one function that lives in its own compiled module,
``scipy/optimize/_lsap``. That module is loaded here directly from SciPy's installed files, so
the function is SciPy's very own (same code, same tie-breaking, same scores). If SciPy's
layout ever changes, the ordinary import is used instead.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import sys
from pathlib import Path

log = logging.getLogger(__name__)

MODULE = "scipy.optimize._lsap"


def _load_compiled():
    """SciPy's compiled ``_lsap`` module, without importing its parent package (None if not found)."""
    if MODULE in sys.modules:
        return sys.modules[MODULE]
    scipy = importlib.util.find_spec("scipy")  # a top-level spec: finds SciPy without importing it
    if scipy is None or not scipy.submodule_search_locations:
        return None
    loader = (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES)
    for location in scipy.submodule_search_locations:
        spec = importlib.machinery.FileFinder(str(Path(location) / "optimize"), loader).find_spec(MODULE)
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules[MODULE] = module  # a later ``import scipy.optimize`` reuses this very module
            return module
    return None


def _resolve():
    try:
        module = _load_compiled()
        if module is not None and callable(getattr(module, "linear_sum_assignment", None)):
            return module.linear_sum_assignment
    except Exception as exc:  # an unexpected SciPy build: fall back, never fail scoring for it
        log.debug("loading %s directly failed (%s): importing scipy.optimize", MODULE, exc)
    from scipy.optimize import linear_sum_assignment

    return linear_sum_assignment


linear_sum_assignment = _resolve()
