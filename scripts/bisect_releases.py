#!/usr/bin/env python3
"""When did an op's time change? ``nox -s bisect -- OP --between OLD NEW``.

The work is in iomatrix.commands.bisect (its docstring says what the command does);
this file is the command line. It is not called bisect.py: scripts/ comes first on
sys.path, where that name would hide the standard library's bisect module.
"""
import sys

from iomatrix.commands import bisect

if __name__ == "__main__":
    sys.exit(bisect.main(sys.argv[1:]))
