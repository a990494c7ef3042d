"""Facts about the machine a run measures on, and its state at the start and end."""
from __future__ import annotations

import hashlib
import os
import platform
import sys
from pathlib import Path

from iomatrix.storing import contract


def filesystem_of(path: Path) -> dict:
    """The mount point and file system type holding ``path`` (from /proc/mounts)."""
    real = os.path.realpath(path)
    best = {"mount": "?", "type": "?", "device": "?"}
    try:
        with open("/proc/mounts") as f:
            for line in f:
                device, mount, fstype = line.split()[:3]
                if (real == mount or real.startswith(mount.rstrip("/") + "/")) and \
                        len(mount) >= len(best["mount"] if best["mount"] != "?" else ""):
                    best = {"mount": mount, "type": fstype, "device": device}
    except OSError:
        pass
    return best


def state(now: str) -> dict:
    """What can make numbers move: load, CPU governor, affinity."""
    result = {"time": now}
    try:
        result["load_average"] = list(os.getloadavg())
    except OSError:
        result["load_average"] = None
    try:
        result["affinity"] = sorted(os.sched_getaffinity(0))
    except AttributeError:
        result["affinity"] = None
    governor = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    result["cpu_governor"] = governor.read_text().strip() if governor.exists() else "unavailable"
    return result


def timing_cpus(affinity: str) -> tuple[set | None, str]:
    """(the CPUs a timed worker is pinned to, what the manifest says of it).

    "one": the highest-numbered CPU this process may use. Measured here (2 vCPUs of a
    shared KVM guest): two processes timing one read call after the other agreed to a
    log-ratio sd of 0.05-0.10 on the same CPU and 0.16-0.28 on different CPUs, whose
    slow phases come and go independently (docs/methodology.md). "all": not pinned.
    """
    if affinity == "all":
        return None, "all CPUs (not pinned)"
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except AttributeError:
        return None, "unpinned: this platform cannot set CPU affinity"
    if len(allowed) < 2:
        return None, f"CPU {allowed[0]} (the only one)" if allowed else "unknown"
    return {allowed[-1]}, f"CPU {allowed[-1]}"


def usable_cpus() -> set | None:
    """Every CPU this process may use (None where affinity cannot be read)."""
    try:
        return set(os.sched_getaffinity(0))
    except AttributeError:
        return None


def spare_cpus(affinity: str) -> set | None:
    """The CPUs this process may use that time no worker; None when there are none."""
    timing = timing_cpus(affinity)[0]
    usable = usable_cpus()
    if timing is None or usable is None:
        return None
    return (usable - timing) or None


def facts() -> dict:
    """The machine a run measured on. ``cpu_flags`` (a digest of the CPU's feature flags) and
    ``boot_id`` (the kernel's id of this boot) say whether two runs' counts come from one host:
    glibc picks its memcpy by the CPU's features, and the same interpreter and op counted on
    two hosts of one CPU model string differed by up to 3.5% in instructions. The host name
    and the model string do not tell such hosts apart (every VM here is "vm", "AMD EPYC")."""
    model = flags = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():   # the first CPU's
            if line.startswith("model name") and model is None:
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and flags is None:
                flags = " ".join(sorted(line.split(":", 1)[1].split()))
    except OSError:
        pass
    cpu = model or platform.processor() or "?"
    try:
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        boot_id = None
    memory = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = int(line.split()[1]) * 1024
                break
    except OSError:
        pass
    return {"host": platform.node(), "os": platform.platform(), "system": platform.system(),
            "cpu": cpu, "cpu_count": os.cpu_count(), "memory_bytes": memory,
            "cpu_flags": hashlib.sha256(flags.encode()).hexdigest()[:16] if flags else None,
            "boot_id": boot_id,
            "host_python": sys.version.split()[0], "libc": " ".join(platform.libc_ver()).strip()}


def allocator_environment(allocator: str) -> dict:
    """The environment variables that pin glibc's allocator in the stated state (none for
    ``default``: the worker then checks that none came in from the caller).

    Raises ValueError naming the valid conditions for an unknown one."""
    if allocator not in contract.ALLOCATORS:
        raise ValueError(f"unknown allocator {allocator!r}; valid: {', '.join(contract.ALLOCATORS)}")
    return dict(contract.ALLOCATOR_ENVIRONMENT[allocator])


# The pinned conditions (steady, fresh) are glibc's MALLOC_MMAP_THRESHOLD_,
# MALLOC_TRIM_THRESHOLD_ and MALLOC_TOP_PAD_, read from the environment at a process's first
# malloc; musl and other libcs have no such knobs, so there only the untouched condition
# (default) is what it says. What pinning stops, the mmap threshold that rises when a mapped
# block is freed, is glibc's since 2.5 (2006): an older glibc's untouched heap is not the one
# docs/allocator.md describes. The version read from an executable is the newest glibc
# symbol version it needs, so a glibc at least that old.
MIN_GLIBC = (2, 5)
PINNED_CONDITIONS = ("steady", "fresh")


def libc_of(executable: str) -> tuple[str, str]:
    """(libc name, version) that ``executable`` links against, as ``platform.libc_ver``
    reads it from the file ('glibc', '2.34'; ('', '') when it names none: musl, a static
    build, a launcher script)."""
    try:
        name, version = platform.libc_ver(os.path.realpath(executable))
    except OSError:
        return "", ""
    return name, version


def pinning_problem(executables) -> str | None:
    """Why the pinned allocator conditions cannot be had for these interpreters (one whose
    executable does not link glibc, or a glibc older than MIN_GLIBC), or None."""
    for executable in executables:
        name, version = libc_of(executable)
        if name != "glibc":
            return (f"{executable} does not link glibc ({name or 'no libc it names'}), whose "
                    "allocator variables pin the heap")
        numbers = tuple(int(n) for n in version.split(".")[:2] if n.isdigit())
        if numbers and numbers < MIN_GLIBC:
            return (f"{executable} links glibc {version}, older than the "
                    f"{'.'.join(map(str, MIN_GLIBC))} that reads the allocator variables")
    return None


def usable_allocators(requested, executables) -> tuple[list, str | None]:
    """``requested`` (--allocator's list) as this machine can time it: unchanged, or, where
    the pinned conditions cannot be had (``pinning_problem``), the untouched condition alone
    and the one line that says why (a run never mixes conditions, so the run is untouched)."""
    requested = [a.strip() for a in requested.split(",")] if isinstance(requested, str) \
        else list(requested)
    if not set(requested) & set(PINNED_CONDITIONS):
        return requested, None
    problem = pinning_problem(executables)
    if problem is None:
        return requested, None
    dropped = ", ".join(a for a in requested if a in PINNED_CONDITIONS)
    return ["default"], (f"the pinned allocator condition ({dropped}) is unavailable: "
                         f"{problem}; timing glibc's or the platform's allocator untouched "
                         "(default) only")


def inherited_allocator_variables(environ=None) -> dict:
    """The allocator variables (MALLOC_*, MIMALLOC_*, malloc tunables, PYTHONMALLOC) in the
    caller's environment: the manifest names them, whatever the condition, because the
    workers inherit them beside what the host sets."""
    return contract.allocator_variables(os.environ if environ is None else environ)
