"""Which API each op opens its files in text mode with, as it runs (tests/test_controls.py).

Run under an interpreter: ``python probe_text_api.py SUITES_DIR FIXTURES SCRATCH SUITE``.
It wraps the builtin ``open``, ``io.open``, ``codecs.open`` and ``mmap.mmap`` before the suite
makes its ops, runs each available op's setup and one call, and prints {op: sorted list of
the APIs they called (an op may open its file in setup and use it in every call), "open" (the builtin), "io.open", "codecs.open" or "mmap", each with ":text" when
called with a mode without "b"}. Written for 2.7 and 3.x alike.
"""
from __future__ import print_function

import codecs
import io
import json
import mmap
import sys

try:
    import __builtin__ as builtins
except ImportError:
    import builtins

suites_dir, fixtures, scratch, suite = sys.argv[1:5]
sys.path.insert(0, suites_dir)
calls = []


def recorded(name, func):
    def wrapper(*args, **kwargs):
        mode = kwargs.get("mode", args[1] if len(args) > 1 else "r")
        if name == "mmap":
            calls.append(name)
        else:
            calls.append(name + ("" if "b" in str(mode) else ":text"))
        return func(*args, **kwargs)
    return wrapper


builtins.open = recorded("open", builtins.open)
if sys.version_info[0] >= 3:
    io.open = builtins.open     # one function on 3.x: the builtin
else:
    io.open = recorded("io.open", io.open)
codecs.open = recorded("codecs.open", codecs.open)
mmap.mmap = recorded("mmap", mmap.mmap)

import _api  # noqa: E402

ctx = _api.load_context(fixtures, scratch, "smoke", "c", "warm")
found = {}
for op in _api.load_suite(suite).ops(ctx):
    if op.unavailable or op.control_of:
        continue
    del calls[:]
    if op.setup:
        op.setup()
    try:
        opened = list(calls)
        _api.prepare_outputs(op, ctx.output, op.run)
        del calls[:]
        result = op.run()
        found[op.name] = sorted(set(opened + calls))
        op.verify(result)
    finally:
        if op.teardown:
            op.teardown()
print(json.dumps(found))
