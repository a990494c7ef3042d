#!/usr/bin/env python3
"""A standalone reproducer and an issue text for a finding: ``nox -s upstream -- OP --between OLD NEW``.

The work is in iomatrix.commands.upstream (its docstring says what the command does);
this file is the command line.
"""
import sys

from iomatrix.commands import upstream

if __name__ == "__main__":
    sys.exit(upstream.main(sys.argv[1:]))
