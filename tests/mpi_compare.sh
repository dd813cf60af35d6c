#!/usr/bin/env bash
# mpi_compare.sh — `bosch compare` and `bosch eval` under mpirun (issue 16; docs/distributed.md),
# registered only when CMake found MPI. On the real model, a small comparison (bosch and ablation
# at two ratios, 1 calibration sample x 160 tokens, 2 held-out cells of 3 samples at 192 tokens,
# validation, A'):
#  1. compare: the plain run is the reference; `mpirun -np 3` (the searches' batch = N, every split
#     cell's masks in N contiguous shares) writes the same results.csv, references.csv,
#     tests.csv, calibration.csv, turnover.csv, aprime.csv, jaccard.csv and mask files (bytes) and
#     the same table.md but for its first line (wall time); the workers got jobs;
#  2. compare with a worker that stops answering (BOSCH_DIST_FAULT=2:12:hang, --worker-timeout 3):
#     exit status non-zero, rank 0 names rank 2 and its host and says the cache holds the work;
#     the same command under `mpirun -np 1` then ends with the reference's files, answering the
#     finished evaluations from the cache;
#  3. eval: the full mask and bosch's rho 0.875 mask with --servable, plain and under `-np 2` and
#     `-np 3` (each cell's samples in N ranges): the same CSV (bytes) and table (seconds aside);
#  4. eval with a silent worker: exit status non-zero, rank 2 and the host named.
# Env: BOSCH_BIN, BOSCH_MODEL (skips, exit 77, without the model); mpirun on PATH (else exit 77).
set -u
BIN=${BOSCH_BIN:-build/bosch}
MODEL=${BOSCH_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
if [[ ! -x "$BIN" ]]; then echo "FAIL: $BIN is not an executable"; exit 1; fi
if [[ ! -f "$MODEL" ]]; then echo "skip: model $MODEL not found"; exit 77; fi
if ! command -v mpirun >/dev/null; then echo "skip: no mpirun"; exit 77; fi
WORK=$(mktemp -d /tmp/mpi_compare.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
MPI=(mpirun --oversubscribe --allow-run-as-root)
[[ -n "${ASAN_OPTIONS:-}" ]] && export ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"
CARGS=(--preset ci --methods bosch,ablation --ratios 0.5,0.875 --budget1 1 --budget3 2 --samples 1
       --length 160 --tasks niah_single,passkey --lengths 192 --heldout 3 --valid 2 --aprime 1 --device cpu)
EARGS=(--tasks niah_single,passkey --lengths 192 --samples 5 --window 16 --servable --device cpu --quiet)
FILES=(results.csv references.csv tests.csv calibration.csv turnover.csv aprime.csv jaccard.csv
       mask_bosch_0.500.csv mask_bosch_0.875.csv mask_ablation_0.500.csv mask_ablation_0.875.csv)
fails=0
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
HOST=$(hostname)

# same_compare DIR WHAT: DIR's reports equal the reference's (bytes; table.md but its first line)
same_compare() {
    local f
    for f in "${FILES[@]}"; do
        if ! cmp -s "$WORK/ref/$f" "$1/$f"; then fail "$2: $f differs from the plain run's"; return; fi
    done
    if ! diff -q <(sed 1d "$WORK/ref/table.md") <(sed 1d "$1/table.md") >/dev/null; then
        fail "$2: table.md differs (its first line aside)"; return
    fi
    pass "$2: the ${#FILES[@]} reports and table.md as the plain run's"
}

# silent_worker RC OUT WHAT: a run whose rank 2 went silent exited non-zero and named it
silent_worker() {
    [[ $1 -ne 0 ]] && pass "$3, silent worker: exit status $1" || fail "$3, silent worker: exit status 0"
    grep -q "worker rank 2 on host $HOST did not answer within 3 s" "$2" &&
        pass "$3, silent worker: rank 0 names rank 2 on host $HOST" ||
        { fail "$3, silent worker: no message naming rank 2"; tail "$2"; }
}

# ---- 1. compare: the same files whatever the number of ranks -----------------------------------
"$BIN" compare "$MODEL" "${CARGS[@]}" --out "$WORK/ref" >"$WORK/ref.out" 2>&1 ||
    { fail "plain compare"; tail "$WORK/ref.out"; exit 1; }
for n in 3; do
    if "${MPI[@]}" -np $n "$BIN" compare "$MODEL" "${CARGS[@]}" --out "$WORK/n$n" >"$WORK/n$n.out" 2>&1; then
        same_compare "$WORK/n$n" "compare, mpirun -np $n"
    else
        fail "compare, mpirun -np $n: exit status non-zero"; tail -5 "$WORK/n$n.out"
    fi
done
grep -q "compare: batch 3, 3 ranks, [1-9][0-9]* jobs sent" "$WORK/n3.out" &&
    pass "compare, mpirun -np 3: jobs went to the workers" || fail "compare, mpirun -np 3: no jobs sent"

# ---- 2. compare with a silent worker, then the same command ------------------------------------
"${MPI[@]}" -x BOSCH_DIST_FAULT=2:12:hang -np 3 "$BIN" compare "$MODEL" "${CARGS[@]}" --worker-timeout 3 \
    --out "$WORK/hang" >"$WORK/hang.out" 2>&1
silent_worker $? "$WORK/hang.out" compare
grep -q "cache.tsv holds every finished evaluation" "$WORK/hang.out" &&
    pass "compare, silent worker: the resume hint" || fail "compare, silent worker: no resume hint"
kept=$(grep -c '^C ' "$WORK/hang/cache.tsv" 2>/dev/null)
[[ ${kept:-0} -ge 1 ]] && pass "compare, silent worker: the cache kept $kept calibration evaluations" ||
    fail "compare, silent worker: nothing kept in the cache"
if "${MPI[@]}" -np 1 "$BIN" compare "$MODEL" "${CARGS[@]}" --out "$WORK/hang" >"$WORK/hang2.out" 2>&1; then
    same_compare "$WORK/hang" "compare, silent worker, the same command under -np 1"
    grep -Eq "cache .*: ${kept} calibration evaluations" "$WORK/hang2.out" &&
        pass "compare, silent worker: the rerun started from the $kept cached evaluations" ||
        fail "compare, silent worker: the rerun did not read the cache"
else
    fail "compare, silent worker: the rerun failed"; tail -5 "$WORK/hang2.out"
fi

# ---- 3. eval: the same table and CSV whatever the number of ranks ------------------------------
for m in full bosch; do
    marg=()
    [[ $m == bosch ]] && marg=(--mask "$WORK/ref/mask_bosch_0.875.csv")
    "$BIN" eval "$MODEL" "${EARGS[@]}" "${marg[@]}" --out "$WORK/e_$m.csv" >"$WORK/e_$m.out" 2>&1 ||
        { fail "plain eval ($m)"; tail "$WORK/e_$m.out"; continue; }
    for n in 2 3; do
        if ! "${MPI[@]}" -np $n "$BIN" eval "$MODEL" "${EARGS[@]}" "${marg[@]}" --out "$WORK/e_${m}_$n.csv" \
            >"$WORK/e_${m}_$n.out" 2>"$WORK/e_${m}_$n.err"; then
            fail "eval ($m), mpirun -np $n: exit status non-zero"; tail -5 "$WORK/e_${m}_$n.err"; continue
        fi
        # the seconds column (the last) of the tables aside
        if cmp -s "$WORK/e_$m.csv" "$WORK/e_${m}_$n.csv" &&
            diff -q <(awk '{$NF = ""; print}' "$WORK/e_$m.out") <(awk '{$NF = ""; print}' "$WORK/e_${m}_$n.out") >/dev/null
        then
            pass "eval ($m), mpirun -np $n: the CSV and the table as the plain run's"
        else
            fail "eval ($m), mpirun -np $n: the results differ from the plain run's"
        fi
    done
done
hits=$(awk -F, 'NR > 1 && $1 == "full" {s += $5} END {print s + 0}' "$WORK/e_full.csv")
awk -v h="$hits" 'BEGIN {exit !(h > 1)}' && pass "eval (full): the full model finds the needles (accuracy sum $hits)" ||
    fail "eval (full): accuracy sum $hits (a check that cannot tell results apart)"

# ---- 4. eval with a silent worker ----------------------------------------------------------------
"${MPI[@]}" -x BOSCH_DIST_FAULT=2:0:hang -np 3 "$BIN" eval "$MODEL" "${EARGS[@]}" --worker-timeout 3 \
    --out "$WORK/e_hang.csv" >"$WORK/e_hang.out" 2>&1
silent_worker $? "$WORK/e_hang.out" eval
[[ ! -e "$WORK/e_hang.csv" ]] && pass "eval, silent worker: no partial CSV" || fail "eval, silent worker: a CSV was written"

[[ $fails -eq 0 ]] && echo "all mpi_compare checks passed" || echo "$fails mpi_compare checks failed"
[[ $fails -eq 0 ]]
