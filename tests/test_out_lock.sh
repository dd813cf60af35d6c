#!/usr/bin/env bash
# test_out_lock.sh — one writer per output (issue 30, item 2; formats/outlock.h), on the real model:
#  1. two searches with the same --out started together: exactly one runs, the other exits 1 saying
#     "another bosch (pid P)" with the runner's pid; the runner, stopped by SIGINT a few evaluations
#     in, has logged each evaluation once (the old code ran both: every evaluation logged twice, no
#     resume possible);
#  2. the same for two evals with the same --out FILE (lock FILE.lock) and two compares with the
#     same --out (the first stopped by SIGINT once the second has been refused);
#  3. a stale lock: a search killed with -9 leaves DIR/.bosch-lock with its dead pid; --resume
#     takes it over (and is stopped by SIGINT once it has logged more); a stopped run leaves no lock
#     file.
# No wall time is asserted: waits poll for files, with a 300 s guard against a hang.
# Env: BOSCH_BIN, BOSCH_MODEL (exit 77 without the model).
set -u
BIN=$(realpath "${BOSCH_BIN:-build/bosch}")
MODEL=$(realpath "${BOSCH_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}" 2>/dev/null)
if [[ ! -x "$BIN" ]]; then echo "FAIL: $BIN is not an executable"; exit 1; fi
if [[ ! -f "$MODEL" ]]; then echo "skip: model not found"; exit 77; fi
WORK=$(mktemp -d /tmp/test_out_lock.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
fails=0
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
SARGS=(--preset tiny --samples 1 --length 256 --ratio 0.5 --budget1 1 --budget3 2 --restarts 0 --device cpu)
# wait_until SECS CMD...: poll CMD until it succeeds (1 when SECS pass first: a hang guard)
wait_until() {
    local deadline=$((SECONDS + $1))
    shift
    while ((SECONDS < deadline)); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}

# one_refused WHAT A_PID A_OUT A_RC B_PID B_OUT B_RC: exactly one of the two exited 1 naming the
# other's pid; prints the winner's tag (a or b) on fd 3
one_refused() {
    local what=$1 pa=$2 oa=$3 ra=$4 pb=$5 ob=$6 rb=$7
    local a_ref=0 b_ref=0
    [[ $ra -eq 1 ]] && grep -q "another bosch (pid $pb) is writing" "$oa" && a_ref=1
    [[ $rb -eq 1 ]] && grep -q "another bosch (pid $pa) is writing" "$ob" && b_ref=1
    if ((a_ref + b_ref == 1)); then
        pass "$what: one refused: $(grep -h 'another bosch' "$oa" "$ob")"
        ((a_ref)) && echo b >&3 || echo a >&3
    else
        fail "$what: refused a=$a_ref b=$b_ref (exit $ra / $rb, want exactly one refusal naming the other)"
        tail -n 3 "$oa" "$ob"
        echo none >&3
    fi
}

# logged DIR N: DIR/state logs at least N evaluations
logged() { [[ -f $1/state ]] && (($(grep -c '^eval ' "$1/state") >= $2)); }
# ---- 1. two searches together --------------------------------------------------------------------
"$BIN" search "$MODEL" "${SARGS[@]}" --out S >a.out 2>&1 &
pa=$!
"$BIN" search "$MODEL" "${SARGS[@]}" --out S >b.out 2>&1 &
pb=$!
# the refused one ends by itself; the other is stopped a few evaluations in
wait_until 600 eval '! kill -0 '$pa' 2>/dev/null || ! kill -0 '$pb' 2>/dev/null'
if kill -0 $pa 2>/dev/null; then
    wait $pb
    rb=$?
    wait_until 600 logged S 3
    kill -INT $pa
    wait $pa
    ra=$?
else
    wait $pa
    ra=$?
    wait_until 600 logged S 3
    kill -INT $pb 2>/dev/null
    wait $pb
    rb=$?
fi
winner=$(one_refused "two searches, one --out" $pa a.out $ra $pb b.out $rb 3>&1 1>&2)
if [[ $winner == a || $winner == b ]]; then
    wrc=$ra
    [[ $winner == b ]] && wrc=$rb
    n_state=$(grep -c '^eval ' S/state)
    n_uniq=$(grep '^eval ' S/state | sort -u | wc -l)
    if [[ $wrc -eq 1 ]] && grep -q '^status=interrupted' $winner.out && ((n_state >= 3 && n_uniq == n_state)); then
        pass "the running search, stopped by SIGINT: its state logs $n_state evaluations, each once"
    else
        fail "the running search: exit $wrc, $n_state state lines ($n_uniq distinct)"
        tail -n 3 $winner.out
    fi
fi
[[ ! -e S/.bosch-lock ]] && pass "no lock file left after the run" || fail "S/.bosch-lock left: $(cat S/.bosch-lock)"

# ---- 2. two evals with one --out FILE; two compares with one --out ------------------------------
EARGS=(--samples 1 --lengths 256 --device cpu --quiet)
"$BIN" eval "$MODEL" "${EARGS[@]}" --out r.csv >a.out 2>&1 &
pa=$!
"$BIN" eval "$MODEL" "${EARGS[@]}" --out r.csv >b.out 2>&1 &
pb=$!
wait $pa
ra=$?
wait $pb
rb=$?
winner=$(one_refused "two evals, one --out file" $pa a.out $ra $pb b.out $rb 3>&1 1>&2)
[[ -s r.csv && ! -e r.csv.lock ]] && pass "r.csv written, r.csv.lock removed" || fail "r.csv: $(ls)"

"$BIN" compare "$MODEL" --preset quick --methods rand --ratios 0.5 --heldout 1 --valid 0 --samples 1 --length 256 \
    --aprime 0 --lengths 256 --tasks niah_single --device cpu --out C >a.out 2>&1 &
pa=$!
if wait_until 300 test -s C/.bosch-lock; then
    "$BIN" compare "$MODEL" --preset quick --out C >b.out 2>&1
    rb=$?
    kill -INT $pa
    wait $pa
    ra=$?
    if [[ $rb -eq 1 ]] && grep -q "C: another bosch (pid $pa) is writing in this folder" b.out; then
        pass "a second compare on the same --out: refused naming pid $pa"
    else
        fail "second compare: exit $rb: $(tail -2 b.out)"
    fi
    [[ ! -e C/.bosch-lock ]] && pass "the stopped compare (exit $ra) removed its lock" || fail "C/.bosch-lock left"
else
    fail "compare never took its lock: $(tail -3 a.out)"
    kill $pa 2>/dev/null
fi

# ---- 3. a stale lock: kill -9, then --resume ------------------------------------------------------
"$BIN" search "$MODEL" "${SARGS[@]}" --out K >a.out 2>&1 &
pa=$!
wait_until 300 eval '[[ -f K/state ]] && (($(grep -c "^eval " K/state) >= 3))' || fail "the search to kill never logged"
kill -9 $pa
wait $pa 2>/dev/null
if [[ $(cat K/.bosch-lock 2>/dev/null) == "$pa" ]]; then
    pass "kill -9 left K/.bosch-lock with the dead pid $pa"
else
    fail "after kill -9: K/.bosch-lock holds '$(cat K/.bosch-lock 2>/dev/null)' (want $pa)"
fi
n=$(grep -c '^eval ' K/state)
"$BIN" search "$MODEL" --device cpu --resume K >b.out 2>&1 &
pb=$!
wait_until 600 logged K $((n + 1))
kill -INT $pb
wait $pb
rb=$?
if [[ $rb -eq 1 ]] && grep -q '^status=interrupted' b.out && grep -q "resumed K/state after" b.out &&
    (($(grep -c '^eval ' K/state) > n)) && [[ ! -e K/.bosch-lock ]]; then
    pass "--resume took the stale lock over and went on ($n -> $(grep -c '^eval ' K/state) evaluations)"
else
    fail "--resume over a stale lock: exit $rb: $(tail -3 b.out)"
fi

echo "$fails failure(s)"
[[ $fails -eq 0 ]]
