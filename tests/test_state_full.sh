#!/usr/bin/env bash
# test_state_full.sh — a failed write of the search's state log stops the search at once (issue 30,
# item 3), on the real model with the tiny preset. A full disk is made by an LD_PRELOAD shim built
# here (no tmpfs mount needed): write(2) to a file named .../state fails after FULL_AFTER calls,
# the first failing call writing 8 bytes of its line first (a line cut by the full disk), with
# errno FULL_ERRNO (28 ENOSPC, 5 EIO). A fresh search meets ENOSPC, its resume EIO:
#  1. the search exits 1 with the error ("No space left on device" / "Input/output error") and says
#     how many evaluations the state holds, right after the failure (no further evaluation: the old
#     code warned and computed on, saving none);
#  2. the state holds exactly that many evaluation lines, each whole (the cut one removed);
#  3. `--resume` continues from there (it replays them and logs more; here it then meets EIO).
# Env: BOSCH_BIN, BOSCH_MODEL (exit 77 without the model; skips without a C compiler).
set -u
BIN=$(realpath "${BOSCH_BIN:-build/bosch}")
MODEL=$(realpath "${BOSCH_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}" 2>/dev/null)
if [[ ! -x "$BIN" ]]; then echo "FAIL: $BIN is not an executable"; exit 1; fi
if [[ ! -f "$MODEL" ]]; then echo "skip: model not found"; exit 77; fi
WORK=$(mktemp -d /tmp/test_state_full.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fails=0
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
cat >"$WORK/full.c" <<'EOF'
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static int calls;
ssize_t write(int fd, const void *buf, size_t n) {
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t k = readlink(link, path, sizeof path - 1);
    if (k > 6 && !memcmp(path + k - 6, "/state", 6)) {
        const char *a = getenv("FULL_AFTER"), *e = getenv("FULL_ERRNO");
        int allow = a ? atoi(a) : 0;
        if (++calls > allow) {
            if (calls == allow + 1 && n > 8) return (ssize_t)syscall(SYS_write, fd, buf, (size_t)8);
            errno = e ? atoi(e) : ENOSPC;
            return -1;
        }
    }
    return (ssize_t)syscall(SYS_write, fd, buf, n);
}
EOF
if ! cc -shared -fPIC -o "$WORK/full.so" "$WORK/full.c" 2>"$WORK/cc.err"; then
    echo "skip: no C compiler for the full-disk shim: $(cat "$WORK/cc.err")"
    exit 77
fi
SARGS=(--preset tiny --samples 1 --length 256 --ratio 0.5 --budget1 1 --budget3 2 --restarts 0 --device cpu)

# run NAME ERRNO ALLOW ARGS...: bosch search ARGS under the shim (ALLOW appends pass, then ERRNO);
# it must stop with exit 1 and the error, the state holding exactly the evaluations the message
# says, each line whole. Sets $held.
run() {
    local name=$1 errno=$2 allow=$3 text
    shift 3
    text=$([[ $errno == 28 ]] && echo "No space left on device" || echo "Input/output error")
    FULL_AFTER=$allow FULL_ERRNO=$errno LD_PRELOAD="$WORK/full.so" timeout -k 10 1200 "$BIN" search "$MODEL" "$@" \
        >"$WORK/out" 2>"$WORK/err"
    local rc=$?
    held=$(grep -o 'holds the first [0-9]* evaluations' "$WORK/err" | grep -o '[0-9]*')
    if [[ $rc -eq 1 ]] && grep -q "$D/state: append failed: $text; the search stopped" "$WORK/err" && [[ -n $held ]]; then
        pass "$name: stopped with the error: $(grep -o 'append failed.*' "$WORK/err" | head -c 160)"
    else
        fail "$name: exit $rc (want 1 and '$text; the search stopped'); stderr:"
        tail -n 4 "$WORK/err"
    fi
    local n bad last
    n=$(grep -c '^eval ' "$D/state" 2>/dev/null)
    bad=$(sed -n '/^log$/,$p' "$D/state" | tail -n +2 | grep -vc '^eval ')
    last=$(tail -c 1 "$D/state" | od -An -c | tr -d ' ')
    if [[ -n $held && $n -eq $held && $bad -eq 0 && $last == '\n' ]]; then
        pass "$name: the state holds $n evaluation lines, each whole"
    else
        fail "$name: state has $n eval lines (message: ${held:-?}), $bad other lines after 'log', ends with '$last'"
        tail -n 2 "$D/state"
    fi
}

D=$WORK/s
# 1. a fresh search on a disk that fills after 4 appends (the 5th cut after 8 bytes)
run "ENOSPC" 28 4 "${SARGS[@]}" --out "$D"
n1=$held
# 2. --resume continues from there: it replays the kept evaluations, logs 2 more, and then meets EIO
run "resume, then EIO" 5 2 --device cpu --resume "$D"
if grep -q "resumed $D/state after $n1 evaluations" "$WORK/err" && [[ -n $n1 && -n $held ]] && ((held > n1)); then
    pass "--resume continued after the $n1 kept evaluations ($held now)"
else
    fail "--resume: $(grep resumed "$WORK/err"), ${n1:-?} -> ${held:-?} evaluations"
fi

echo "$fails failure(s)"
[[ $fails -eq 0 ]]
