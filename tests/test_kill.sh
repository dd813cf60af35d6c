#!/usr/bin/env bash
# test_kill.sh — nothing finished is lost when a command is killed with SIGKILL (issue 18, item 2).
# 24 kills at seeded random moments (BOSCH_KILL_SEED, default 18; the moments are printed):
#  1. `bosch search` (12 kills): started, killed, resumed with --resume, killed again ... then run to
#     the end (the first kill anywhere in the start, the others 0.1-4 s into the evaluations). After every kill DIR/state holds every evaluation the run had reported but the one in
#     flight (the progress line "eval N/" on a fake terminal, through an isatty shim), and its
#     complete lines are a prefix of the uninterrupted reference run's log (run alongside). The
#     resumed search ends with mask.csv and layers.csv byte-identical to the reference, trace.csv and
#     the state identical but for the seconds column (wall time), and no temporary file left.
#  2. `bosch compare` (6 kills), rerun with the same command: every file present after a kill is a
#     complete version (a CSV with the final header and as many lines as the final one), the last run
#     finishes and leaves no temporary file.
#  3. the export of `bosch eval --out F` (6 kills; fsync slowed by a shim so that kills land inside
#     the write, the first one surely): F is always the old complete file or the new complete one,
#     and the next run removes the temporary files the killed ones left.
# Env: BOSCH_BIN, BOSCH_MODEL (skips, exit 77, without the model). Needs a C compiler for the two
# shims; without one the "reported evaluations" check and the slow write are skipped.
set -u
BIN=${BOSCH_BIN:-build/bosch}
MODEL=${BOSCH_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
if [[ ! -x "$BIN" ]]; then echo "FAIL: $BIN is not an executable"; exit 1; fi
if [[ ! -f "$MODEL" ]]; then echo "skip: model $MODEL not found"; exit 77; fi
WORK=$(mktemp -d /tmp/test_kill.XXXXXX)
REF_PID=
trap '[[ -n "$REF_PID" ]] && kill -9 "$REF_PID" 2>/dev/null; rm -rf "$WORK"' EXIT
RANDOM=${BOSCH_KILL_SEED:-18}
fails=0
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# rand_s MIN_MS MAX_MS: a seeded random delay in seconds (for sleep)
rand_s() {
    local ms=$(($1 + RANDOM % ($2 - $1 + 1)))
    printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}

TTY_SO= SLOW_SO=
cat >"$WORK/tty.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
int isatty(int fd) {
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "isatty");
    return fd == 2 ? 1 : real(fd);
}
EOF
cat >"$WORK/slow.c" <<'EOF'
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>
int fsync(int fd) { sleep(2); return (int)syscall(SYS_fsync, fd); }
EOF
if cc -shared -fPIC -o "$WORK/tty.so" "$WORK/tty.c" -ldl 2>/dev/null &&
    cc -shared -fPIC -o "$WORK/slow.so" "$WORK/slow.c" 2>/dev/null; then
    TTY_SO=$WORK/tty.so SLOW_SO=$WORK/slow.so
else
    echo "skip: no C compiler: the reported-evaluations check and the slow write are not tested"
fi

# ---- 1. search ------------------------------------------------------------------------------
SARGS=(--preset tiny --samples 1 --length 256 --ratio 0.5 --budget1 1 --budget3 2 --restarts 0 --device cpu)
"$BIN" search "$MODEL" "${SARGS[@]}" --out "$WORK/ref" >"$WORK/ref.out" 2>&1 &
REF_PID=$!
K=$WORK/k
# header lines of a version-2 state: up to and including "log"
header_lines() { grep -n -m1 '^log$' "$1" | cut -d: -f1; }
n_kill=0 finished=0
for ((i = 1; i <= 12; i++)); do
    if [[ ! -f "$K/state" ]]; then # killed before the first evaluation: start again
        cmd=(search "$MODEL" "${SARGS[@]}" --out "$K")
    else
        cmd=(search "$MODEL" --resume "$K" --device cpu)
    fi
    LD_PRELOAD=$TTY_SO "$BIN" "${cmd[@]}" >"$WORK/s$i.out" 2>"$WORK/s$i.err" &
    pid=$!
    if ((i == 1)); then # anywhere in the start (model load, calibration, first evaluations)
        d=$(rand_s 200 3000)
    else # some time into the evaluations, which start after a load that takes seconds on a busy machine
        for ((k = 0; k < 600; k++)); do
            grep -q 'bosch search, ratio\|resumed' "$WORK/s$i.err" && break
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.05
        done
        d=$(rand_s 100 4000)
    fi
    sleep "$d"
    if ! kill -0 "$pid" 2>/dev/null; then
        wait "$pid"
        finished=$?
        echo "search run $i finished before its kill at ${d}s (exit $finished)"
        finished=1
        break
    fi
    kill -9 "$pid"
    wait "$pid" 2>/dev/null
    n_kill=$((n_kill + 1))
    if [[ ! -f "$K/state" ]]; then
        # only possible while the model and the calibration load, before the first evaluation
        grep -q 'eval [0-9]*/' "$WORK/s$i.err" && fail "search kill $i at ${d}s: no state after evaluations"
        echo "search kill $i at ${d}s: before the first evaluation"
        continue
    fi
    h=$(header_lines "$K/state")
    have=$(($(wc -l <"$K/state") - h)) # complete lines: a cut last line has no newline
    said=$(grep -o 'eval [0-9]*/' "$WORK/s$i.err" | tail -1 | tr -dc 0-9)
    said=${said:-0}
    cp "$K/state" "$WORK/snap$i"
    if [[ -n "$TTY_SO" ]] && ((have < said - 1)); then
        fail "search kill $i at ${d}s: state holds $have evaluations, the run had reported $said"
    else
        echo "search kill $i at ${d}s: state holds $have evaluations (run reported $said)"
    fi
done
if ((!finished)); then
    "$BIN" search "$MODEL" --resume "$K" --device cpu >"$WORK/last.out" 2>&1
    rc=$?
    [[ $rc -eq 0 ]] || { fail "the last resume -> $rc"; tail -3 "$WORK/last.out"; }
fi
wait "$REF_PID"
ref_rc=$?
REF_PID=
[[ $ref_rc -eq 0 ]] || { fail "reference search -> $ref_rc"; tail -3 "$WORK/ref.out"; }
for f in mask.csv layers.csv; do
    cmp -s "$WORK/ref/$f" "$K/$f" && pass "search killed $n_kill times: $f identical to the reference" ||
        fail "search killed $n_kill times: $f differs from the reference"
done
no_seconds_trace() { cut -d, -f8 --complement "$1"; }
no_seconds_state() { awk '/^eval /{ $6 = "-" } { print }' "$1"; }
cmp -s <(no_seconds_trace "$WORK/ref/trace.csv") <(no_seconds_trace "$K/trace.csv") &&
    pass "trace.csv identical to the reference but for the seconds" || fail "trace.csv differs from the reference"
no_seconds_state "$WORK/ref/state" >"$WORK/ref.state"
cmp -s "$WORK/ref.state" <(no_seconds_state "$K/state") &&
    pass "state identical to the reference but for the seconds" || fail "state differs from the reference"
bad=0
for s in "$WORK"/snap*; do
    [[ -f "$s" ]] || continue
    n=$(wc -l <"$s")
    cmp -s <(head -n "$n" "$WORK/ref.state") <(no_seconds_state "$s" | head -n "$n") || {
        bad=$((bad + 1))
        echo "  $s is not a prefix of the reference's state"
    }
done
((bad == 0)) && pass "every state after a kill: complete lines a prefix of the reference's log" ||
    fail "$bad states after a kill differ from the reference's log"
left=$(ls "$K" | grep -c '\.tmp\.')
((left == 0)) && pass "search: no temporary file left" || fail "search: $left temporary files left: $(ls "$K")"

# ---- 2. compare -----------------------------------------------------------------------------
C=$WORK/cmp
CARGS=(compare "$MODEL" --preset quick --methods rand,bosch --ratios 0.5 --heldout 2 --valid 0 --samples 1
    --length 256 --aprime 0 --lengths 256 --tasks niah_single --budget1 1 --budget3 2 --device cpu --out "$C")
for ((i = 1; i <= 6; i++)); do
    "$BIN" "${CARGS[@]}" >"$WORK/c$i.out" 2>&1 &
    pid=$!
    d=$(rand_s 1000 7000)
    sleep "$d"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    mkdir -p "$WORK/csnap$i"
    cp "$C"/*.csv "$C"/table.md "$WORK/csnap$i/" 2>/dev/null
    echo "compare kill $i at ${d}s: $(ls "$WORK/csnap$i" | wc -l) result files, cache $(wc -l <"$C/cache.tsv" 2>/dev/null) lines"
done
"$BIN" "${CARGS[@]}" >"$WORK/clast.out" 2>&1
rc=$?
[[ $rc -eq 0 ]] && grep -q '^heldout,bosch,0.5000,all,' "$C/results.csv" && pass "compare finishes after 6 kills" ||
    { fail "the last compare -> $rc"; tail -3 "$WORK/clast.out"; }
bad=0
for s in "$WORK"/csnap*/*; do
    [[ -f "$s" ]] || continue
    f="$C/$(basename "$s")"
    # the first line of table.md ends with the run's wall time, "(14 s)": not part of the content
    if [[ ! -f "$f" || $(head -1 "$s" | sed 's/ ([0-9]* s)$//') != $(head -1 "$f" | sed 's/ ([0-9]* s)$//') ||
        $(wc -l <"$s") -ne $(wc -l <"$f") ||
        -n "$(tail -c1 "$s")" ]]; then
        bad=$((bad + 1))
        echo "  $s: not a complete version of $f"
    fi
done
((bad == 0)) && pass "compare: every file present after a kill is complete" || fail "compare: $bad incomplete files"
left=$(ls "$C" | grep -c '\.tmp\.')
((left == 0)) && pass "compare: no temporary file left" || fail "compare: $left temporary files left"

# ---- 3. the export of eval ------------------------------------------------------------------
F=$WORK/results.csv
EARGS=(eval "$MODEL" --samples 1 --lengths 256 --device cpu --quiet)
"$BIN" "${EARGS[@]}" --method old --out "$WORK/old.csv" >/dev/null 2>&1
"$BIN" "${EARGS[@]}" --method new --out "$WORK/new.csv" >/dev/null 2>&1
cp "$WORK/old.csv" "$F"
bad=0 stale=0
for ((i = 1; i <= 6; i++)); do
    LD_PRELOAD=$SLOW_SO "$BIN" "${EARGS[@]}" --method new --out "$F" >/dev/null 2>&1 &
    pid=$!
    if ((i == 1)) && [[ -n "$SLOW_SO" ]]; then # surely inside the write: its temporary file exists
        for ((k = 0; k < 400; k++)); do
            ls "$F".tmp.* >/dev/null 2>&1 && break
            sleep 0.05
        done
        d="(in the write)"
    else
        d=$(rand_s 300 5000)
        sleep "$d"
        d="at ${d}s"
    fi
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    n=$(ls "$F".tmp.* 2>/dev/null | wc -l)
    ((n > stale)) && stale=$n
    if cmp -s "$F" "$WORK/old.csv"; then
        v=old
    elif cmp -s "$F" "$WORK/new.csv"; then
        v=new
    else
        v=neither
        bad=$((bad + 1))
    fi
    echo "export kill $i $d: $v version, $n temporary files"
done
((bad == 0)) && pass "export: after each of 6 kills the file is the old or the new complete version" ||
    fail "export: $bad kills left a file that is neither version"
"$BIN" "${EARGS[@]}" --method new --out "$F" >/dev/null 2>&1
left=$(ls "$F".tmp.* 2>/dev/null | wc -l)
if cmp -s "$F" "$WORK/new.csv" && ((left == 0)); then
    pass "export: the next run writes the new version and removes the $stale stale temporary file(s)"
else
    fail "export: next run: $left temporary files left (of $stale), file $(cmp -s "$F" "$WORK/new.csv" && echo new || echo wrong)"
fi
if [[ -n "$SLOW_SO" ]] && ((stale == 0)); then fail "export: no kill landed inside the write"; fi

echo "$fails failure(s)"
[[ $fails -eq 0 ]]
