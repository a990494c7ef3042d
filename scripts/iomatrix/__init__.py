"""iomatrix's host side, in the stages a run goes through (each a subpackage; the layers
contract in pyproject.toml, checked by tests/test_imports.py, keeps every import pointing down):

- ``commands``: compare, release, history, agree, bisect, upstream, changelogs, crosscheck,
  sensitivity, built on the stages below;
- ``reporting``: markdown pages, sections, figures, the HTML preview;
- ``analysing``: a stored run as tables, comparisons, findings, counts;
- ``measuring``: the run spec, rounds, workers, sampling, counting;
- ``interpreters``: discovery, provisioning, each interpreter's environment;
- ``storing``: run directories, the results contract, the schema of stored documents;
- and, used by all: ``cli``, ``paths``, ``procs``, ``stats``, ``callgrind``, ``markup``.
"""
