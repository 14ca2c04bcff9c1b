"""The processes of a fake-NPU cluster, read with psutil: a process can end, or turn out
unreadable, between the listing and the read."""

from __future__ import annotations

import psutil

#: What psutil raises for a process that ended, or that this user may not read.
PROCESS_GONE = (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess)


def process_title(process: psutil.Process) -> str | None:
    """The title the process runs under: the first word of its command line, where Ray
    names its workers (``ray::ProxyActor``); None where the process is gone."""
    try:
        words = process.cmdline()
    except PROCESS_GONE:
        return None
    return words[0].strip() if words else ""
