#!/usr/bin/env python3
"""Build CPython interpreters from source into the iomatrix cache: ``nox -s provision -- VERSION...``.

The work is in ``iomatrix/interpreters/provision.py`` (building) and ``iomatrix/interpreters/sources.py`` (tarballs);
the README's "Provisioning" section says how.
"""
import sys

from iomatrix.interpreters import provision

if __name__ == "__main__":
    sys.exit(provision.main(sys.argv[1:]))
