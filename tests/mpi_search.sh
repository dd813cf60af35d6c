#!/usr/bin/env bash
# mpi_search.sh — `bosch search` under mpirun (issue 16; docs/distributed.md), registered only when
# CMake found MPI. On the real model with a tiny preset (1 sample x 160 tokens, 131 evaluations):
#  1. the plain run (batch 1) is the reference; the plain run with --batch 3 and the run under
#     `mpirun -np 3` (batch = N) end with the same mask.csv (bytes), the same trace.csv and state
#     but for the seconds column (wall time); `-np 2` and `-np 1` are checked by the resumes of 2.
#     and 3., which compute most of the search under them;
#  2. a worker that stops answering (BOSCH_DIST_FAULT=2:20:hang, --worker-timeout 3): exit status
#     non-zero, rank 0's message names rank 2 and its host, the state's log is a prefix of the
#     reference's, and `--resume` under `mpirun -np 2` finishes it to the reference's files;
#  3. kill -9 of rank 2 mid-run: exit status non-zero, rank 2 named (by rank 0 or by mpirun), and
#     `--resume` under `mpirun -np 1` finishes to the reference's files.
# Env: BOSCH_BIN, BOSCH_MODEL (skips, exit 77, without the model); mpirun on PATH (else exit 77).
set -u
BIN=${BOSCH_BIN:-build/bosch}
MODEL=${BOSCH_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
if [[ ! -x "$BIN" ]]; then echo "FAIL: $BIN is not an executable"; exit 1; fi
if [[ ! -f "$MODEL" ]]; then echo "skip: model $MODEL not found"; exit 77; fi
if ! command -v mpirun >/dev/null; then echo "skip: no mpirun"; exit 77; fi
WORK=$(mktemp -d /tmp/mpi_search.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
MPI=(mpirun --oversubscribe --allow-run-as-root)
# under scripts/sanitize: Open MPI's components have no frame pointers, so LeakSanitizer needs the
# full unwinder to see that a leak is Open MPI's (tests/sanitize/lsan.supp)
[[ -n "${ASAN_OPTIONS:-}" ]] && export ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"
ARGS=(--preset tiny --samples 1 --length 160 --ratio 0.5 --budget1 1 --budget3 2 --restarts 0 --device cpu)
fails=0
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
HOST=$(hostname)

# same_run DIR: DIR's files equal the reference's (mask bytes; trace and state but for seconds)
same_run() {
    local d=$1 what=$2
    if ! cmp -s "$WORK/ref/mask.csv" "$d/mask.csv"; then fail "$what: mask.csv differs"; return; fi
    if ! diff -q <(cut -d, -f1-7,9- "$WORK/ref/trace.csv") <(cut -d, -f1-7,9- "$d/trace.csv") >/dev/null; then
        fail "$what: trace.csv differs (seconds aside)"; return
    fi
    if ! diff -q <(awk '{$6 = ""; print}' "$WORK/ref/state") <(awk '{$6 = ""; print}' "$d/state") >/dev/null; then
        fail "$what: state differs (seconds aside)"; return
    fi
    pass "$what: mask, trace and state as the reference"
}

# log_prefix DIR: DIR/state's evaluations are the first ones of the reference's
log_prefix() {
    local n
    n=$(grep -c '^eval ' "$1/state")
    if [[ $n -ge 1 ]] && diff -q <(grep '^eval ' "$1/state" | awk '{$6 = ""; print}') \
        <(grep '^eval ' "$WORK/ref/state" | head -n "$n" | awk '{$6 = ""; print}') >/dev/null; then
        pass "$2: the state holds $n evaluations, the reference's first ones"
    else
        fail "$2: the state's $n evaluations are not the reference's first ones"
    fi
}

"$BIN" search "$MODEL" "${ARGS[@]}" --out "$WORK/ref" >"$WORK/ref.out" 2>&1 || { fail "reference run"; cat "$WORK/ref.out"; exit 1; }
refn=$(grep -c '^eval ' "$WORK/ref/state")
[[ $refn -gt 100 ]] && pass "reference: $refn evaluations" || fail "reference: only $refn evaluations"

# ---- 1. the same search whatever the batch and the number of ranks ---------------------------
"$BIN" search "$MODEL" "${ARGS[@]}" --batch 3 --out "$WORK/b3" >"$WORK/b3.out" 2>&1 || fail "plain --batch 3 run"
same_run "$WORK/b3" "plain run, --batch 3"
for n in 3; do
    if "${MPI[@]}" -np $n "$BIN" search "$MODEL" "${ARGS[@]}" --out "$WORK/n$n" >"$WORK/n$n.out" 2>&1; then
        same_run "$WORK/n$n" "mpirun -np $n"
    else
        fail "mpirun -np $n: exit status non-zero"; tail -5 "$WORK/n$n.out"
    fi
done
grep -q "worker rank 2 on host .* ready" "$WORK/n3.out" && grep -q "3 ranks, [1-9][0-9]* jobs sent" "$WORK/n3.out" &&
    pass "mpirun -np 3: two workers ready, jobs sent to them" || fail "mpirun -np 3: no jobs went to workers"

# ---- 2. a worker that stops answering --------------------------------------------------------
"${MPI[@]}" -x BOSCH_DIST_FAULT=2:20:hang -np 3 "$BIN" search "$MODEL" "${ARGS[@]}" --worker-timeout 3 \
    --out "$WORK/hang" >"$WORK/hang.out" 2>&1
rc=$?
[[ $rc -ne 0 ]] && pass "silent worker: exit status $rc" || fail "silent worker: exit status 0"
grep -q "worker rank 2 on host $HOST did not answer within 3 s" "$WORK/hang.out" &&
    pass "silent worker: rank 0 names rank 2 on host $HOST" || { fail "silent worker: no message naming rank 2"; tail "$WORK/hang.out"; }
grep -q "holds every finished evaluation; continue with 'mpirun -np N bosch search" "$WORK/hang.out" &&
    pass "silent worker: the resume hint" || fail "silent worker: no resume hint"
log_prefix "$WORK/hang" "silent worker"
"${MPI[@]}" -np 2 "$BIN" search "$MODEL" --resume "$WORK/hang" --device cpu >"$WORK/hang2.out" 2>&1 &&
    same_run "$WORK/hang" "silent worker, resumed with -np 2" || fail "silent worker: the resume failed"

# ---- 3. kill -9 of a worker ------------------------------------------------------------------
"${MPI[@]}" -np 3 "$BIN" search "$MODEL" "${ARGS[@]}" --out "$WORK/kill" >"$WORK/kill.out" 2>&1 &
mp=$!
for _ in $(seq 600); do # until 30 evaluations are logged (at most 60 s)
    [[ -f "$WORK/kill/state" ]] && [[ $(grep -c '^eval ' "$WORK/kill/state") -ge 30 ]] && break
    sleep 0.1
done
victim=
for p in $(pgrep -f -- "--out $WORK/kill"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=2' && victim=$p
done
if [[ -n "$victim" ]]; then
    kill -9 "$victim"
    wait $mp
    rc=$?
    [[ $rc -ne 0 ]] && pass "killed worker: exit status $rc" || fail "killed worker: exit status 0"
    grep -Eq "rank 2 (on host|with PID)" "$WORK/kill.out" && pass "killed worker: rank 2 named" ||
        { fail "killed worker: rank 2 not named"; tail "$WORK/kill.out"; }
    log_prefix "$WORK/kill" "killed worker"
    "${MPI[@]}" -np 1 "$BIN" search "$MODEL" --resume "$WORK/kill" --device cpu >"$WORK/kill2.out" 2>&1 &&
        same_run "$WORK/kill" "killed worker, resumed with -np 1" || fail "killed worker: the resume failed"
else
    wait $mp
    fail "killed worker: rank 2 not found (the run ended first?)"
fi

[[ $fails -eq 0 ]] && echo "all mpi_search checks passed" || echo "$fails mpi_search checks failed"
[[ $fails -eq 0 ]]
