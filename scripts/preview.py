"""Render a run's report pages (or one markdown page) to HTML as GitHub shows them.

    python scripts/preview.py [--run-id ID | PAGE.md] [--out DIR] [--screenshot]

The work is in iomatrix.reporting.preview; this file is the command line.
"""
from __future__ import annotations

import sys

from iomatrix.reporting import preview

if __name__ == "__main__":
    sys.exit(preview.main())
