"""What the client benches share: one support-triage question set and its states. Not a bench
itself (``make bench`` runs the files whose names do not start with ``_``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

QUESTIONS: dict[str, Any] = {
    "refund": {"type": "noul", "instructions": "Is a duplicate-charge refund requested?"},
    "team": {
        "type": "choice",
        "instructions": "Which team should handle this?",
        "criteria": {
            "account": "Login and account settings",
            "billing": "Payments and refunds",
            "technical": "Software and hardware problems",
        },
    },
    "urgency": {
        "type": "score",
        "instructions": "How urgent is this request?",
        "criteria": ["Routine", "Needs attention today", "Service unavailable"],
    },
}


def states(n: int) -> list[dict[str, object]]:
    """``n`` distinct ticket states, each asking for a refund of a double charge."""
    return [
        {"ticket": i, "message": f"Ticket {i}: the terminal charged invoice INV-{i} twice."}
        for i in range(n)
    ]


# A child forked from this process starts with this process's peak RSS as its own (Linux
# carries the high-water mark across fork and exec), so a bench that has built 100,000 states
# in memory would read that as the child's peak. Each measured command is therefore forked from
# a small launcher (``python -S``, about 8 MiB) that waits for it and reports its rusage.
_LAUNCHER = """
import os, sys, time
out = int(sys.argv[1])
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.close(out)
    try:
        os.execv(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - started
code = os.waitstatus_to_exitcode(status)
os.write(out, f"{code} {ru.ru_maxrss} {ru.ru_utime + ru.ru_stime} {wall}".encode())
"""


@dataclass(frozen=True)
class Measured:
    """One command's exit code, wall seconds, peak RSS (KiB) and CPU seconds (user + system,
    every thread, with the children it reaped), and its stderr lines."""

    code: int
    wall: float
    maxrss_kib: int
    cpu: float
    stderr: list[str]


def run_measured(args: Sequence[str], *, stdout: int | None = subprocess.DEVNULL) -> Measured:
    """Run ``args`` (argv[0] a path, e.g. ``sys.executable``) through the launcher above."""
    read, write = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-S", "-c", _LAUNCHER, str(write), *args],
            stdout=stdout,
            stderr=subprocess.PIPE,
            pass_fds=(write,),
        )
        os.close(write)
        write = -1
        _, err = proc.communicate()
        report = os.read(read, 256).decode().split()
    finally:
        os.close(read)
        if write != -1:
            os.close(write)
    code, maxrss, cpu, wall = int(report[0]), int(report[1]), float(report[2]), float(report[3])
    return Measured(code, wall, maxrss, cpu, err.decode(errors="replace").strip().splitlines())
