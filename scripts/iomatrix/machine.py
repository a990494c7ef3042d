"""Facts about the machine a run measures on, and its state at the start and end."""
from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

from iomatrix import contract


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


def facts() -> dict:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
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
            "host_python": sys.version.split()[0], "libc": " ".join(platform.libc_ver()).strip()}


def allocator_environment(allocator: str) -> dict:
    """The environment variables that pin glibc's allocator in the stated state."""
    return dict(contract.ALLOCATOR_ENVIRONMENT[allocator])
