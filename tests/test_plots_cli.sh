#!/usr/bin/env bash
# test_plots_cli.sh — `bosch bench --csv FILE` on the real model draws its figure beside FILE
# (plots/: the paper's Figure 5): FILE's stem .png (the PNG signature, IHDR 1200x420), .svg (parsed
# by python3's XML parser) and .gp, whose data blocks hold exactly the CSV's speed rows per ratio
# (tests/plots_check.py); without gnuplot on PATH the CSV and the script are still written, with one
# warning line and exit status 0.
# Env: BOSCH_BIN, BOSCH_MODEL (skip with 77 when absent). Needs gnuplot and python3 (scripts/setup).
set -u
BIN=${BOSCH_BIN:-build/bosch}
MODEL=${BOSCH_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
[[ -f "$MODEL" ]] || { echo "skip: model $MODEL not found"; exit 77; }
CHECK=$(cd "$(dirname "$0")" && pwd)/plots_check.py
WORK=$(mktemp -d /tmp/test_plots_cli.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
command -v gnuplot >/dev/null || { echo "FAIL: gnuplot is not installed (scripts/setup installs gnuplot-nox)"; exit 1; }

run=(bench "$MODEL" --lengths 64,128 --ratios 0,1 --decode 2 --eval-samples 0)
"$BIN" "${run[@]}" --csv "$WORK/b.csv" >"$WORK/o1" 2>"$WORK/e1"
rc=$?
[[ $rc -eq 0 ]] && ok "bench with --csv exits 0" || bad "bench exit $rc: $(tail -2 "$WORK/e1")"
grep -qx "bench: figures $WORK/b (PNG, SVG and the gnuplot script)" "$WORK/e1" && ok "bench says where the figure is" ||
    bad "no figure line: $(tail -2 "$WORK/e1")"
# the rows each data block must hold: length prefill decode kv_MiB of ratio 0 ($r0) and 1 ($r1)
for r in 0 1; do
    awk -F, -v r=$r 'NR > 1 && $1 == "speed" && $3 + 0 == r { printf "%s %s %s %.6f\n", $2, $8, $9, $7 / 1048576 }' \
        "$WORK/b.csv" | sort -n >"$WORK/want$r"
done
[[ $(wc -l <"$WORK/want0") -eq 2 && $(wc -l <"$WORK/want1") -eq 2 ]] || bad "CSV speed rows: $(cat "$WORK/b.csv")"
python3 "$CHECK" "$WORK/b" 1200 420 r0="$WORK/want0" r1="$WORK/want1" &&
    ok "b.png (1200x420), b.svg (valid XML) and b.gp (the CSV's speed rows, by ratio and length)" ||
    bad "figure check"

# without gnuplot: one warning line, the CSV and the script written, exit 0, no picture
PATH=/nonexistent "$BIN" "${run[@]}" --csv "$WORK/n.csv" >"$WORK/o2" 2>"$WORK/e2"
rc=$?
n=$(grep -c 'gnuplot' "$WORK/e2")
[[ $rc -eq 0 ]] && ok "without gnuplot: exit 0" || bad "without gnuplot: exit $rc"
grep -qx "bosch bench: warning: gnuplot not found: wrote $WORK/n.gp but no PNG or SVG (install gnuplot-nox)" "$WORK/e2" &&
    [[ $n -eq 1 ]] && ok "without gnuplot: one warning line" || bad "warning: $(grep gnuplot "$WORK/e2")"
[[ -s "$WORK/n.csv" && -s "$WORK/n.gp" && ! -e "$WORK/n.png" && ! -e "$WORK/n.svg" ]] &&
    ok "without gnuplot: the CSV and the script, no PNG or SVG" || bad "files without gnuplot: $(ls "$WORK")"
ls "$WORK" | grep -q '\.tmp\.' && bad "a temporary file was left" || ok "no temporary file left"

if ((fails)); then
    echo "$fails check(s) failed"
    exit 1
fi
echo "all plot checks passed"
