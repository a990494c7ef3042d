"""The building blocks of the stored documents' schemas: strict models, names and bounds.

``Ours`` is a part of a document iomatrix writes (every key known), ``Open`` one that
another tool (pyperf) writes (its other keys kept); both are strict (no "3" for 3) and
refuse NaN and infinities. The field types carry the plausible ranges the schema's
docstring lists (``Seconds``: 1 ns to 1 hour, ``Ratio``: their quotient's range,
``BytesPerCall``, ``Count``, ...), and the names (``OpName``, ``SuiteName``, ``Label``,
``SeriesName``, ``RunId``) follow ``iomatrix.cli.name_problem``'s rules. The document
models made of them are schema.py's, which re-exports these names.
"""
from __future__ import annotations

from typing import Annotated, Any, Optional

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from iomatrix import cli


def _config(extra: str) -> ConfigDict:
    return ConfigDict(strict=True, allow_inf_nan=False, extra=extra, frozen=True)


class Ours(BaseModel):
    """A document or part of one that iomatrix writes: every key known."""
    model_config = _config("forbid")


class Open(BaseModel):
    """A part of a document that another tool (pyperf) writes: its other keys are kept."""
    model_config = _config("allow")


MIN_SECONDS, MAX_SECONDS = 1e-9, 3600.0
Seconds = Annotated[float, Field(ge=MIN_SECONDS, le=MAX_SECONDS,
                                 description="one call's time: 1 ns to 1 hour")]
# The quotient of two valid times is always a valid ratio, so compare never writes output
# its own schema refuses.
# Any two per-call times make a valid comparison, so a ratio reaches 1 h / 1 ns = 3.6e12 and
# its inverse; the 1% slack covers the float rounding of a mean of values and of an
# interval's ends (3600000000000.002 is a valid 1 h over 1 ns).
RATIO_SLACK = 1.01
Ratio = Annotated[float, Field(ge=MIN_SECONDS / MAX_SECONDS / RATIO_SLACK,
                               le=MAX_SECONDS / MIN_SECONDS * RATIO_SLACK,
                               description="one time over another: both are 1 ns to 1 hour")]
PhaseSeconds = Annotated[float, Field(ge=1e-6, le=60.0, description=(
    "a phase probe's fixed piece of work (20,000 additions, a 4 MiB copy): ~1 ms here"))]
Count = Annotated[int, Field(ge=0, le=10 ** 15, description="a count: a non-negative integer")]
Bytes = Annotated[int, Field(ge=0, le=2 ** 50, description="a byte size, up to 1 PiB")]
BytesPerCall = Annotated[int, Field(ge=0, le=2 ** 36, description=(
    "bytes one call reads or writes, up to 64 GiB (the largest op moves 25 MiB)"))]
ProcessBytes = Annotated[int, Field(ge=0, le=2 ** 40, description="a process's memory, to 1 TiB")]
Round = Annotated[int, Field(ge=0, le=1_000_000, description="a worker process's round")]
Fraction = Annotated[float, Field(ge=0.0, le=10.0)]
PerValue = Annotated[float, Field(ge=0.0, le=1e8, description=(
    "a count per timed call: page faults, context switches (10**8 faults are 400 GB)"))]
Epoch = Annotated[float, Field(ge=0.0, le=1e11, description="seconds since 1970")]
LongSeconds = Annotated[float, Field(ge=0.0, le=1e7, description="a pass's duration, budget")]


def _name(kind: str):
    def check_name(value: str) -> str:
        problem = cli.name_problem(value, kind)
        if problem is not None:
            raise ValueError(problem)
        return value
    return AfterValidator(check_name)


OpName = Annotated[str, _name("op")]
SuiteName = Annotated[str, _name("suite")]
Label = Annotated[str, _name("label")]
SeriesName = Annotated[str, _name("series")]
RunId = Annotated[str, _name("run id")]
Text = Optional[str]
# An interpreter's version as platform.python_version() gives it (3.15.0rc2, 3.14.0a6+,
# 2.7.18): pages state it beside labels, so it is held to that form like a name.
VersionText = Optional[Annotated[str, Field(pattern=r"^[0-9]{1,3}(\.[0-9]{1,4}){1,3}"
                                                    r"((a|b|rc|c)[0-9]{1,3})?\+?$",
                                            max_length=32)]]
Json = Any   # an open part: the reader guarantees finite numbers and a bounded depth
