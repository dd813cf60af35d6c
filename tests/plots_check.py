#!/usr/bin/env python3
"""plots_check.py — check a figure bosch wrote (plots/): NAME.png, NAME.svg and NAME.gp.

    python3 tests/plots_check.py BASE WIDTH HEIGHT [BLOCK=CSVROWS ...]

BASE.png must start with the PNG signature and an IHDR chunk of WIDTH x HEIGHT (PNG spec 5.2,
11.2.2); BASE.svg must parse with xml.etree with an <svg> root of viewBox "0 0 WIDTH HEIGHT";
each BLOCK=FILE argument compares the numbers of data block $BLOCK of BASE.gp with the rows of
FILE (one row per line, numbers separated by blanks, made by the caller from the CSV with awk),
to 1e-4. Exit 0 when all hold, else 1 with the reason on stderr. Used by the shell tests
(test_plots_cli.sh, test_compare_cli.sh); tests/test_plots.c checks the same in C.
"""
import struct
import sys
import xml.etree.ElementTree as ET


def fail(msg):
    print("plots_check: " + msg, file=sys.stderr)
    sys.exit(1)


def block(gp, name):
    rows, inside = [], False
    for line in open(gp, encoding="utf-8"):
        line = line.rstrip("\n")
        if not inside:
            inside = line == "$%s << EOD" % name
            continue
        if line == "EOD":
            return rows
        if line.startswith("#"):
            continue
        nums = []
        for w in line.split():
            try:
                nums.append(float(w))
            except ValueError:
                pass
        rows.append(nums)
    fail("%s: no data block $%s" % (gp, name))


def main():
    base, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    png = open(base + ".png", "rb").read()
    if png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        fail(base + ".png: not a PNG")
    pw, ph = struct.unpack(">II", png[16:24])
    if (pw, ph) != (w, h):
        fail("%s.png: %dx%d, want %dx%d" % (base, pw, ph, w, h))
    root = ET.parse(base + ".svg").getroot()
    if root.tag != "{http://www.w3.org/2000/svg}svg" or root.get("viewBox") != "0 0 %d %d" % (w, h):
        fail("%s.svg: root %s viewBox %s" % (base, root.tag, root.get("viewBox")))
    for arg in sys.argv[4:]:
        name, ref = arg.split("=", 1)
        got = block(base + ".gp", name)
        want = [[float(x) for x in l.split()] for l in open(ref) if l.strip()]
        if len(got) != len(want):
            fail("$%s: %d rows, want %d" % (name, len(got), len(want)))
        for g, e in zip(got, want):
            if len(g) < len(e) or any(abs(a - b) > 1e-4 for a, b in zip(g, e)):
                fail("$%s: row %s, want %s" % (name, g, e))


main()
