"""iomatrix host-side library: discovery, environments, runner, results store, analysis, reports."""
