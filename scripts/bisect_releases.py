#!/usr/bin/env python3
"""When did an op's time change? ``nox -s bisect -- OP --between OLD NEW``.

The work is in iomatrix.commands.bisect (its docstring says what the command does) and,
with --cpython-repo, iomatrix.commands.bisect_commits;
this file is the command line. It is not called bisect.py: scripts/ comes first on
sys.path, where that name would hide the standard library's bisect module.
"""
import sys

from iomatrix.commands import bisect_commits

if __name__ == "__main__":
    # bisect_commits.main runs the commit bisect (--cpython-repo), else the release bisect.
    sys.exit(bisect_commits.main(sys.argv[1:]))
