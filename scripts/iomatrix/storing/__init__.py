"""Storing: what a run keeps on disk and how it is read back safely (run directories, the results
contract, the schema of every stored document, profiles, the counters file's format)."""
