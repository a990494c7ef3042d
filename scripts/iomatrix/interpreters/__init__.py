"""The interpreters: finding them (discovery), building them (provision, sources) and giving
each an environment with pyperf (environments). Measuring and the commands (bench, matrix,
release, bisect) stand on this stage; it stands on storing and the base modules only."""
