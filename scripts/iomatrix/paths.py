"""Where things are: the repository's own directories, found from this file's place in it."""
from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPTS_DIR = REPO_ROOT / "scripts"
SUITES_DIR = REPO_ROOT / "suites"
DATA_DIR = SCRIPTS_DIR / "data"
RESULTS_DIR = REPO_ROOT / "results"
REPORTS_DIR = REPO_ROOT / "reports"
# Per-interpreter environments live with nox's own, so `rm -rf .nox` resets both.
ENVS_DIR = REPO_ROOT / ".nox" / "iomatrix-envs"
# What discovery's probe said of each interpreter binary (discovery.PROBE_CACHE_FILE).
PROBE_CACHE_FILE = REPO_ROOT / ".nox" / "iomatrix-probes.json"
