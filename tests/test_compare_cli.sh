#!/usr/bin/env bash
# test_compare_cli.sh — `bosch compare --preset ci` on the real model: the documented protocol scaled
# down to minutes (compare/compare.c: 3 x 192-token calibration samples of mixed tasks, bosch / bosch_paper / intr /
# ablation at rho 0.5 and 0.875, held-out niah_single, niah_multikey (prose) and passkey at 192 and
# 256 tokens). Checks:
#  1. a run stopped by SIGINT exits 130 and keeps its evaluations in DIR/cache.tsv;
#  2. the same command continues from the cache and finishes; a third run makes no evaluation at
#     all and writes byte-identical results.csv, tests.csv, calibration.csv (deterministic);
#  3. results.csv: the columns of docs/search.md; accuracy = hits/n; ci_lo <= accuracy <= ci_hi;
#     held-out rows for every (method, ratio, task, length) and "all";
#  4. tests.csv: one McNemar row per ratio and split with bosch against a baseline, p in [0, 1];
#  8. the transfer split (the held-out tasks at 384 tokens): bosch and the best other method on
#     validation at each ratio, the references, McNemar rows and the table;
#  5. references.csv (all full and all SWA on every cell, the window check) equals `bosch eval`
#     on the same held-out samples, and its check column follows the 0.9 / 0.1 thresholds;
#  6. another plan in the same folder is refused (nothing mixed in);
#  7. the figures beside results.csv (plots/): PNG, SVG, the results' rows in the gnuplot scripts,
#     and one warning line without gnuplot;
#  9. --confirm / --confirm-length in the same folder: only the confirmation's evaluations are made,
#     bosch's finalists in calibration.csv, and a rerun answers them all from the cache.
# Env: BOSCH_BIN, BOSCH_MODEL (skips with 77 without the model).
set -u
BIN=${BOSCH_BIN:-build/bosch}
MODEL=${BOSCH_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
[[ -f "$MODEL" ]] || { echo "skip: model $MODEL not found"; exit 77; }
WORK=$(mktemp -d /tmp/test_compare.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
D=$WORK/cmp

"$BIN" compare "$MODEL" --preset ci --out "$D" >"$WORK/o1" 2>"$WORK/e1" &
pid=$!
# stop once some calibration evaluations are in the cache
for _ in $(seq 1 600); do
  [[ -f "$D/cache.tsv" ]] && [[ $(wc -l <"$D/cache.tsv") -gt 40 ]] && break
  sleep 0.2
done
kill -INT $pid
wait $pid
rc=$?
n1=$(($(wc -l <"$D/cache.tsv") - 1))
[[ $rc -eq 130 && $n1 -gt 0 ]] && ok "stopped: exit 130, $n1 evaluations kept" ||
  { bad "stop: exit $rc, $n1 cached"; tail -40 "$WORK/e1"; }

"$BIN" compare "$MODEL" --preset ci --out "$D" >"$WORK/o2" 2>"$WORK/e2"
rc=$?
grep -q "cache $D/cache.tsv: $n1 calibration evaluations" "$WORK/e2" && [[ $rc -eq 0 ]] &&
  ok "resumed from $n1 cached evaluations and finished" || bad "resume: exit $rc: $(tail -2 "$WORK/e2")"
for f in results.csv references.csv tests.csv calibration.csv turnover.csv aprime.csv table.md mask_bosch_0.500.csv; do
  [[ -s "$D/$f" ]] || bad "missing $f"
done
mkdir -p "$WORK/first" && cp "$D"/results.csv "$D"/tests.csv "$D"/calibration.csv "$WORK/first/"
"$BIN" compare "$MODEL" --preset ci --out "$D" >"$WORK/o3" 2>"$WORK/e3"
grep -q "(0 calibration evaluations made, 0 race rounds, 0 split scores made)" "$WORK/e3" && ok "third run: nothing recomputed" ||
  bad "third run recomputed: $(grep 'done in' "$WORK/e3")"
for f in results.csv tests.csv calibration.csv; do
  cmp -s "$D/$f" "$WORK/first/$f" && ok "$f identical on a rerun" || bad "$f differs on a rerun"
done

head -1 "$D/results.csv" | grep -qx 'split,method,ratio,task,haystack,length,n,hits,accuracy,ci_lo,ci_hi,score,kv_bytes' &&
  ok "results.csv header" || bad "results.csv header: $(head -1 "$D/results.csv")"
awk -F, 'NR > 1 {
    if ($7 <= 0 || ($8 / $7 - $9) > 1e-4 || ($9 - $8 / $7) > 1e-4) { print "hits/n " $0; bad++ }
    if ($10 > $9 + 1e-9 || $11 < $9 - 1e-9 || $10 < 0 || $11 > 1) { print "interval " $0; bad++ }
    if ($1 == "heldout") n[$2 "," $3]++
  } END { for (k in n) if (n[k] != 7) { print "cells of " k ": " n[k]; bad++ }  exit bad > 0 }' "$D/results.csv" \
  && ok "results.csv rows: hits/n, Wilson bounds, 6 cells + all per method and ratio" || bad "results.csv rows"
rows=$(awk -F, 'NR > 1 && $1 == "heldout" && $3 == "bosch" && $4 != "" && $10 >= 0 && $10 <= 1' "$D/tests.csv" | wc -l)
[[ $rows -eq 2 ]] && ok "tests.csv: $rows held-out McNemar rows" || bad "tests.csv rows: $rows"

# 8. The transfer split (issue 31 item 4; ci: the three held-out tasks at 384 tokens, 2 samples
# each, same window): at each ratio bosch and the one best other method on validation (exact
# matches, then mean answer probability, then plan order), 6 samples each pooled; the references
# (window check) on every transfer cell; a McNemar row per ratio against the method scored there.
awk -F, 'NR > 1 && $4 == "all" {
    if ($1 == "validation" && $2 !~ /^bosch/ && (!($3 in bh) || $8 > bh[$3] || ($8 == bh[$3] && $12 > bs[$3]))) {
      bh[$3] = $8; bs[$3] = $12; bm[$3] = $2
    }
    if ($1 == "transfer") { t[$3] = t[$3] " " $2 " "; nt[$3]++; if ($7 != 6) { print "n " $0; bad++ } }
  } END {
    for (r in bm) { m++
      if (nt[r] != 2 || !index(t[r], " bosch ") || !index(t[r], " " bm[r] " ")) { print "transfer at " r ":" t[r] "- want bosch and " bm[r]; bad++ }
    }
    if (m != 2) { print "ratios with a validation pick: " m; bad++ }
    exit bad > 0 }' "$D/results.csv" && ok "results.csv: transfer rows of bosch and the best other method on validation" ||
  bad "results.csv: transfer rows"
[[ $(grep -c '^transfer,full,' "$D/references.csv") -eq 4 && $(grep -c '^transfer,all_swa,' "$D/references.csv") -eq 4 ]] &&
  ok "references.csv: the window check on the transfer cells" || bad "references.csv: transfer rows"
rows=$(awk -F, 'NR > 1 && $1 == "transfer" && $3 == "bosch" && $10 >= 0 && $10 <= 1' "$D/tests.csv" | wc -l)
[[ $rows -eq 2 ]] && ok "tests.csv: $rows transfer McNemar rows" || bad "tests.csv transfer rows: $rows"
grep -q "^transfer split" "$D/table.md" && ok "table.md has the transfer table" || bad "table.md: no transfer table"

# references.csv: the window check's full and all-SWA rows, against `bosch eval` on the same
# held-out samples (another code path: the eval command's own evaluator, no cache, no reuse)
[[ $(head -1 "$D/references.csv") == "split,reference,task,haystack,length,n,hits,accuracy,ci_lo,ci_hi,score,check" ]] &&
  ok "references.csv header" || bad "references.csv header: $(head -1 "$D/references.csv")"
: >"$WORK/ev_all.csv"
for ref in "" --all-swa; do
  # shellcheck disable=SC2086
  "$BIN" eval "$MODEL" $ref --tasks niah_single,passkey --haystack noise --lengths 192,256 --samples 2 \
    --window 16 --sinks 0 --device cpu --quiet --out "$WORK/ev1.csv" >/dev/null 2>&1
  # shellcheck disable=SC2086
  "$BIN" eval "$MODEL" $ref --tasks niah_multikey --haystack text --lengths 192,256 --samples 2 \
    --window 16 --sinks 0 --device cpu --quiet --out "$WORK/ev2.csv" >/dev/null 2>&1
  tail -n +2 "$WORK/ev1.csv" >>"$WORK/ev_all.csv"
  tail -n +2 "$WORK/ev2.csv" >>"$WORK/ev_all.csv"
done
awk -F, 'NR == FNR { acc[$1 "," $3 "," $4] = $5; sc[$1 "," $3 "," $4] = $6; next }
  FNR > 1 && $1 == "heldout" && $3 != "all" {
    k = $2 "," $3 "," $5; seen++
    if (!(k in acc)) { print "no eval row for " k; bad++; next }
    if ((acc[k] - $8)^2 > 1e-8 || (sc[k] - $11)^2 > 1e-8) { print "differs: " k " eval " acc[k] " " sc[k] " compare " $8 " " $11; bad++ }
    if ($2 == "full" && ($12 == "ok") != ($8 >= 0.9)) { print "check " $0; bad++ }
    if ($2 == "all_swa" && ($12 == "ok") != ($8 <= 0.1)) { print "check " $0; bad++ }
  } END { if (seen != 12) { print "rows: " seen; bad++ } exit bad > 0 }' "$WORK/ev_all.csv" "$D/references.csv" &&
  ok "references.csv: full and all-SWA per held-out cell = bosch eval's, checks right" || bad "references.csv"
grep -q "^window check (heldout, window 16)" "$D/table.md" && ok "table.md has the window check" ||
  bad "table.md: no window check"

# 7. The figures (plots/) beside results.csv: PNG 960x540, valid SVG, and scripts whose data blocks
# hold results.csv's held-out "all" rows (accuracy vs ratio: ratio accuracy ci_lo ci_hi of each
# method in file order, sorted by ratio; Pareto: KV MiB and accuracy); without gnuplot on PATH,
# one warning line and exit 0 (the rerun recomputes nothing).
CHECK=$(cd "$(dirname "$0")" && pwd)/plots_check.py
grep -qx "compare: figures $D/accuracy_vs_ratio and $D/pareto (PNG, SVG and the gnuplot script)" "$WORK/e3" &&
  ok "compare says where the figures are" || bad "no figure line in $(tail -3 "$WORK/e3")"
methods=$(awk -F, 'NR > 1 && $1 == "heldout" && $4 == "all" && !seen[$2]++ { print $2 }' "$D/results.csv")
args_r=() args_p=()
i=0
for m in $methods; do
  awk -F, -v m="$m" 'NR > 1 && $1 == "heldout" && $4 == "all" && $2 == m { print $3, $9, $10, $11 }' "$D/results.csv" |
    sort -n >"$WORK/r$i"
  awk -F, -v m="$m" 'NR > 1 && $1 == "heldout" && $4 == "all" && $2 == m { print $3, $13 / 1048576, $9 }' "$D/results.csv" |
    sort -n | awk '{ print $2, $3 }' >"$WORK/p$i"
  args_r+=("m$i=$WORK/r$i") args_p+=("m$i=$WORK/p$i")
  i=$((i + 1))
done
((i == 4)) || bad "results.csv methods: $methods"
python3 "$CHECK" "$D/accuracy_vs_ratio" 960 540 "${args_r[@]}" && python3 "$CHECK" "$D/pareto" 960 540 "${args_p[@]}" &&
  ok "accuracy_vs_ratio and pareto: PNG, SVG and the results' rows in their scripts" || bad "figures"
PATH=/nonexistent "$BIN" compare "$MODEL" --preset ci --out "$D" >"$WORK/o5" 2>"$WORK/e5"
rc=$?
[[ $rc -eq 0 && $(grep -c gnuplot "$WORK/e5") -eq 1 ]] &&
  grep -qx "bosch compare: warning: gnuplot not found: wrote $D/accuracy_vs_ratio.gp and $D/pareto.gp but no PNG or SVG (install gnuplot-nox)" \
    "$WORK/e5" && cmp -s "$D/results.csv" "$WORK/first/results.csv" &&
  ok "without gnuplot: one warning line, exit 0, results.csv written" || bad "without gnuplot: exit $rc: $(grep gnuplot "$WORK/e5")"

"$BIN" compare "$MODEL" --preset ci --samples 2 --out "$D" >"$WORK/o4" 2>"$WORK/e4"
rc=$?
[[ $rc -eq 1 ]] && grep -q "other settings" "$WORK/e4" && ok "another plan refused" || bad "other plan: exit $rc"

# 9. --confirm and --confirm-length (the bench preset's confirmation; the ci preset has none): in the
# same folder the cache answers every calibration evaluation and only the confirmation's are made
# (one per finalist, and one more where the kept finalist is a start the race dropped); bosch at
# each ratio scores its finalists (calibration.csv confirm_finalists >= 2, confirm_kept named), the
# methods without a refinement none; a rerun asks the cache for all of them and writes the same file.
"$BIN" compare "$MODEL" --preset ci --confirm 2 --confirm-length 256 --out "$D" >"$WORK/o6" 2>"$WORK/e6"
rc=$?
made=$(sed -n 's/.*done in [0-9]* s (\([0-9]*\) calibration evaluations made.*/\1/p' "$WORK/e6")
fin=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  $1 == "bosch" && $c["confirm_finalists"] >= 2 && $c["confirm_kept"] != "" { n += $c["confirm_finalists"]; r++ }
  $1 != "bosch" && $c["confirm_finalists"] + 0 != 0 { bad++ }
  END { print (bad || r != 2 ? -1 : n) }' "$D/calibration.csv")
[[ $rc -eq 0 && $fin -ge 4 && -n "$made" ]] && ((made >= fin && made <= fin + 2)) &&
  ok "--confirm 2 --confirm-length 256: bosch confirmed $fin finalists, $made evaluations made" ||
  bad "--confirm: exit $rc, finalists $fin, made '$made': $(tail -2 "$WORK/e6")"
cp "$D/calibration.csv" "$WORK/cal6"
"$BIN" compare "$MODEL" --preset ci --confirm 2 --confirm-length 256 --out "$D" >"$WORK/o7" 2>"$WORK/e7"
grep -q "(0 calibration evaluations made" "$WORK/e7" && cmp -s "$D/calibration.csv" "$WORK/cal6" &&
  ok "--confirm rerun: every confirmation answered by the cache, calibration.csv identical" ||
  bad "--confirm rerun: $(grep 'done in' "$WORK/e7")"
exit $((fails > 0))
