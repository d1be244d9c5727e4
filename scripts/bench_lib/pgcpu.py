"""PostgreSQL's CPU, read from /proc (issue 17, part 1): the postmaster and every process it started
(backends, background workers, autovacuum, checkpointer, WAL writer...), including the ones that
exited meanwhile.

A process's /proc/PID/stat gives its own user and system CPU (utime, stime) and those of its
children that exited and were waited for (cutime, cstime). The postmaster waits for every child it
forks, so the CPU of a backend that exited is in the postmaster's cutime/cstime, and that of a live
one in its own utime/stime. The total of
    postmaster (utime + stime + cutime + cstime) + every live child (utime + stime + cutime + cstime)
therefore only grows, and its difference over an interval is the CPU PostgreSQL spent in it,
whatever connected, disconnected or was forked in between. Resolution: one clock tick (10 ms).
"""
import os

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid):
    """(ppid, utime + stime, cutime + cstime) in ticks, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            raw = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name (field 2) is parenthesised and may hold spaces: split after its last ')'.
    rest = raw[raw.rindex(")") + 2:].split()
    # rest[0] is field 3 (state): ppid is field 4, utime..cstime fields 14..17.
    return int(rest[1]), int(rest[11]) + int(rest[12]), int(rest[13]) + int(rest[14])


def postmaster_pid(data_directory):
    """The postmaster's pid: the first line of DATA/postmaster.pid."""
    with open(os.path.join(data_directory, "postmaster.pid")) as f:
        return int(f.readline().strip())


class PGCPU:
    """CPU seconds of a PostgreSQL server and all its processes, by /proc."""

    def __init__(self, pid):
        self.pid = pid

    def _children(self):
        total = 0
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == self.pid:
                continue
            s = _stat(name)
            if s is not None and s[0] == self.pid:
                total += s[1] + s[2]
        return total

    def seconds(self):
        """Total CPU seconds so far. A child that exits between the reads would count twice or not
        at all; the postmaster's reaped-children CPU is read before and after the children, and the
        read is repeated when it moved (a child exited meanwhile)."""
        for _ in range(20):
            before = _stat(self.pid)
            if before is None:
                raise RuntimeError(f"PostgreSQL's postmaster (pid {self.pid}) is gone")
            children = self._children()
            after = _stat(self.pid)
            if after is not None and after[2] == before[2]:
                return (after[1] + after[2] + children) / TICK
        raise RuntimeError("PostgreSQL's processes kept exiting while their CPU was read")


class Span:
    """`with Span(cpu) as s: ...` then `s.seconds`: PostgreSQL CPU spent inside the block."""

    def __init__(self, cpu):
        self.cpu, self.seconds = cpu, 0.0

    def __enter__(self):
        self.start = self.cpu.seconds()
        return self

    def __exit__(self, *exc):
        self.seconds = self.cpu.seconds() - self.start
        return False
