"""One schema per stored document (iomatrix.storing.schema): what a run directory may hold.

Every document the project has stored validates; each kind of damage the issue found
is refused with the field named; the fields other work adds (the run spec, build facts)
are accepted. Damage at random is tests/test_fuzz.py's.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from iomatrix.storing import schema, store
from conftest import ROOT

RESULTS = ROOT / "results"


def kind_of(path: Path) -> str:
    if path.name == store.MANIFEST:
        return "manifest"
    return "counters" if store.plain_name(path).endswith(store.COUNTERS_SUFFIX) else "series"


def stored_documents() -> list[Path]:
    """Every stored document, plain or compressed (results/ keeps its runs' files as .gz)."""
    return sorted(p for p in list(RESULTS.glob("*/*.json")) + list(RESULTS.glob("*/*.json.gz")))


@pytest.mark.skipif(not stored_documents(), reason="no stored runs in results/")
def test_every_stored_document_is_valid():
    """The schema describes what iomatrix wrote: every published run reads as it is."""
    refused = []
    for path in stored_documents():
        try:
            store.read_json(path, store.MAX_MANIFEST_BYTES * 16, kind=kind_of(path))
        except store.ResultFileError as exc:
            refused.append(str(exc))
    assert not refused, refused[:3]


def series(values=(0.01, 0.011), **run_meta) -> dict:
    return {"version": "1.0", "metadata": {},
            "benchmarks": [{"metadata": {"name": "read_byLines_textMode",
                                         "iomatrix_suite": "lutz2009", "iomatrix_bytes": 1000},
                            "runs": [{"metadata": {"iomatrix_round": 0, **run_meta},
                                      "warmups": [[1, 0.01]], "values": list(values)}]}]}


def counters(**op) -> dict:
    entry = {"suite": "lutz2009", "bytes_per_call": 1000, "calls": 1,
             "syscalls": {"read": 3}, "rusage": {"minflt": 0, "majflt": 0, "nvcsw": 0,
                                                 "nivcsw": 1}, "instructions": 1000, **op}
    return {"iomatrix_counters_version": 1, "series": "3.13", "ops": {"op": entry}}


def manifest(**fields) -> dict:
    return {"run_id": "R", "started": "2026-01-01T00:00:00+00:00",
            "interpreters": {"3.13": {"label": "3.13", "version_info": [3, 13, 0]}},
            "sessions": [{"started": "2026-01-01T00:00:00+00:00", "pid": 1}], **fields}


@pytest.mark.parametrize("kind, document", [
    ("series", series()), ("counters", counters()), ("manifest", manifest()),
    ("counters", counters(syscall_bytes={"read": 4096, "write": 0})),
    # shared interfaces of other work: accepted as they are written
    ("manifest", manifest(spec={"run_id": "R", "profile": "quick", "ops": None, "seed": 3,
                                "budget_seconds": 0.0, "target": 0.015, "keep_fixtures": False,
                                "suites": ["lutz2009"], "conditions": {"clock": "auto"}})),
    ("manifest", manifest(interpreters={"3.13": {"opt": "-O3", "cflags": None, "pgo": True,
                                                 "frame_pointers": None, "jit": False,
                                                 "recipe": "shared-O3",
                                                 "sysconfig": {"Py_ENABLE_SHARED": 1}}})),
    # a call that frees what it found makes its peak-RSS growth a little negative
    ("series", series(iomatrix_peak_rss=-315392)),
])
def test_valid_documents_pass(kind, document):
    assert schema.check(kind, document) is document


@pytest.mark.parametrize("kind, document, field", [
    # the cases of issue 24, and their neighbours
    ("series", series(values=(1e308,)), "values[0]"),
    ("series", series(values=(5e-324,)), "values[0]"),
    ("series", series(values=(0.0,)), "values[0]"),
    ("series", series(values=("0.01",)), "values[0]"),
    ("series", series(iomatrix_round=-1), "iomatrix_round"),
    ("series", series(iomatrix_round=1.5), "iomatrix_round"),
    ("series", series(iomatrix_surprise=1), "iomatrix_surprise"),
    ("series", {**series(), "version": "2.0"}, "version"),
    ("counters", counters(calls=-1), "calls"),
    ("counters", counters(calls=0), "calls"),
    ("counters", counters(syscalls={"read": "lots"}), "syscalls.read"),
    ("counters", counters(instructions=-27216), "instructions"),
    ("counters", counters(bytes_per_call=-1), "bytes_per_call"),
    # the bytes the system calls moved (issue 35): non-negative integers below 2**50, by the
    # name of a call that moves bytes
    ("counters", counters(syscall_bytes={"read": -1}), "syscall_bytes.read"),
    ("counters", counters(syscall_bytes={"read": 2 ** 64}), "syscall_bytes.read"),
    ("counters", counters(syscall_bytes={"read": "lots"}), "syscall_bytes.read"),
    ("counters", counters(syscall_bytes={"read": 1.5}), "syscall_bytes.read"),
    ("counters", counters(syscall_bytes={"<b>open</b>": 1}), "syscall_bytes"),
    ("counters", counters(syscall_bytes=[1, 2]), "syscall_bytes"),
    ("manifest", manifest(interpreters={"3.13": {"version_info": "3.13"}}), "version_info"),
    ("manifest", manifest(cpu_count="many"), "cpu_count"),
    ("manifest", manifest(interpreters=[1]), "interpreters"),
    ("manifest", manifest(sessions={}), "sessions"),
    ("manifest", manifest(surprise=1), "surprise"),
    ("manifest", manifest(interpreters={"3.13": {"free_threaded": 1}}), "free_threaded"),
    ("phase sample", {"wall_time": 1.7e9, "loop_seconds": 1e308, "copy_seconds": 0.001},
     "loop_seconds"),
    ("phase sample", {"wall_time": 1.7e9, "loop_seconds": 0.001, "copy_seconds": 5e-324},
     "copy_seconds"),
])
def test_damage_is_refused_naming_the_field(kind, document, field):
    with pytest.raises(schema.SchemaError) as caught:
        schema.check(kind, document)
    message = str(caught.value)
    assert message.count("\n") == 0 and "field " in message and field in message, message


@pytest.mark.parametrize("text, message", [
    (b"[" * 100_000 + b"]" * 100_000, "nested 100000 levels deep"),
    (b'{"a": NaN}', "non-finite number"),
    (b'{"a": [Infinity]}', "non-finite number"),
    (b'{"a": -Infinity}', "non-finite number"),
])
def test_deep_nesting_and_non_finite_numbers_are_refused_before_any_schema(tmp_path, text,
                                                                           message):
    path = tmp_path / "3.13.json"
    path.write_bytes(text)
    with pytest.raises(store.ResultFileError, match=message) as caught:
        store.read_json(path, kind="series")
    assert str(path) in str(caught.value)


def test_brackets_inside_strings_do_not_count_as_nesting():
    assert store.nesting_depth(b'{"a": "[[[[{{{{\\"[[["}') == 1
    assert store.parse_json(json.dumps({"op": "[" * 100}).encode()) == {"op": "[" * 100}


def test_a_foreign_json_file_is_named_as_such():
    with pytest.raises(schema.SchemaError, match="not a pyperf result file"):
        schema.check("series", {"tool": "asv"})
    with pytest.raises(schema.SchemaError, match="JSON object was expected, not list"):
        schema.check("manifest", [1, 2])


def test_compare_output_schema_refuses_a_non_finite_ratio():
    document = {"method": "m", "paired": False, "confidence": 0.95, "fail_above": 0.05,
                "machine_phase": {"a": None, "b": None},
                "comparisons": [{"series_a": "3.12", "series_b": "3.13", "op": "op",
                                 "time_a": 0.01, "time_b": 0.01, "ratio": float("inf"),
                                 "low": None, "high": None, "significant": None,
                                 "regression": False, "processes_a": 2, "processes_b": 2}]}
    with pytest.raises(schema.SchemaError, match="ratio"):
        schema.check("compare output", document)
