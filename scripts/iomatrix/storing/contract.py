"""The results contract, as the host imports it: ``suites/_results.py``, loaded by path.

The workers (every Python from 2.7) and the host must run the same code for
metadata keys, file names, atomic writes, safe reads and merging, so that code
lives once, with the workers, in the common subset of 2.7 and 3.x. The host
loads that file under the name ``iomatrix.storing.contract``; nothing else of the worker
side is imported by the host.
"""
import importlib.util
import sys

from iomatrix.paths import SUITES_DIR

_spec = importlib.util.spec_from_file_location(__name__, SUITES_DIR / "_results.py")
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
sys.modules[__name__] = _module  # `from iomatrix.storing import contract` gives suites/_results.py
