#!/usr/bin/env python3
"""read_bytes.py FILE CMD ARGS... — run CMD, write the bytes it read to FILE, exit with its status.

The figure is the kernel's rchar of the process (/proc/PID/io: bytes passed to read() and its
kind, page cache or not), taken after CMD has exited and before it is reaped (waitid WNOWAIT), so
it counts the whole run. It does not depend on how busy the machine is, unlike a wall time: a test
that must show "refused before reading the file" compares it with the file's size. CMD's standard
output and error are CMD's own. Linux only.
"""
import os
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    p = subprocess.Popen(sys.argv[2:])
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
    with open(f"/proc/{p.pid}/io") as f:
        io = dict(line.split(": ") for line in f.read().splitlines())
    rc = p.wait()
    with open(sys.argv[1], "w") as f:
        f.write(io["rchar"].strip() + "\n")
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main())
