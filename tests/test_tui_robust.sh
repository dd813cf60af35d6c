#!/usr/bin/env bash
# test_tui_robust.sh — the explorer's share of issue 30, driven through tmux:
#  1. TERM=dumb (no cursor addressing): refused at once with a message naming the terminal type,
#     exit 1 (was: a blank screen but the footer, no word);
#  2. `o` and a FIFO (no writer) as the mask to load, Enter, then q: the load is refused naming the
#     FIFO and the explorer exits 0 (was: the screen restored but the process never exited, one
#     thread blocked in open, deaf to SIGINT, SIGTERM and SIGHUP);
#  3. one writer per folder: once the explorer has saved its workspace to DIR (W), a `bosch search
#     --out DIR` is refused naming the explorer's pid; the explorer's exit removes its lock;
#  4. exports (x m) to a FIFO: refused naming it, the FIFO kept; through a symbolic link: the link's
#     target written, the link kept;
#  5. at 20x5 the "too small" screen says it whole, wrapped (it was cut after 20 columns);
#  6. a workspace whose search cannot be resumed (a state whose second evaluation's hash is wrong):
#     the explorer says so and is not left [preparing] (it spun on forever).
# Waits are hang guards (tui_lib.sh), not speed bounds.
# Env: BOSCH_BIN, BOSCH_MODEL (skip with 77 when absent). Needs tmux (else 77).
set -u
source "$(dirname "$0")/tui_lib.sh" test_tui_robust

# wait_until_s SECS CMD...: poll CMD (a hang guard)
wait_until_s() {
    local deadline=$((SECONDS + $1))
    shift
    while ((SECONDS < deadline)); do
        "$@" 2>/dev/null && return 0
        sleep 0.2
    done
    return 1
}

# start SESSION TERMTYPE: the explorer at 100x30; the pane's shell then writes its exit status to
# $WORK/SESSION.rc
start() {
    T new-session -d -s "$1" -x 100 -y 30 \
        "cd '$WORK' && env TERM=$2 '$BIN' '$MODEL' 2>'$WORK/$1.err'; echo rc=\$? > '$WORK/$1.rc'; sleep 600"
}

# ---- 1. TERM=dumb ---------------------------------------------------------------------------------
start dumb dumb
if wait_file "$WORK/dumb.rc" 120; then
    if [[ $(cat "$WORK/dumb.rc") == rc=1 ]] && grep -q "the terminal type 'dumb' (TERM) cannot move the cursor" "$WORK/dumb.err"; then
        pass "TERM=dumb: refused, exit 1: $(head -c 120 "$WORK/dumb.err")"
    else
        fail "TERM=dumb: $(cat "$WORK/dumb.rc"), stderr: $(cat "$WORK/dumb.err")"
    fi
else
    fail "TERM=dumb: the explorer did not exit"
    screen dumb
fi

# ---- 2. o FIFO Enter q -----------------------------------------------------------------------------
mkfifo "$WORK/fifo"
start fifo "$TT"
if wait_for fifo '\[ready\]' 180; then
    T send-keys -t fifo o
    wait_for fifo 'Load a mask' 60 >/dev/null
    T send-keys -t fifo C-u "$WORK/fifo" Enter
    wait_for fifo 'fifo: is a FIFO, not a regular file' 60 && pass "o FIFO: refused, naming it" ||
        fail "o FIFO: no refusal on the screen"
    T send-keys -t fifo Escape
    # 4. exports: to the FIFO, then through a link
    T send-keys -t fifo x
    sleep 0.5
    T send-keys -t fifo m C-u "$WORK/fifo" Enter
    wait_for fifo 'fifo is not a regular file' 60 && pass "x m FIFO: refused, naming it" ||
        fail "x m FIFO: no refusal"
    [[ -p $WORK/fifo ]] && pass "the FIFO is still a FIFO" || fail "the FIFO was replaced"
    T send-keys -t fifo Escape
    echo old >"$WORK/target.csv"
    ln -s target.csv "$WORK/link.csv"
    T send-keys -t fifo x
    sleep 0.5
    T send-keys -t fifo m C-u "$WORK/link.csv" Enter
    if wait_until_s 120 grep -q '^model,' "$WORK/target.csv" && [[ -L $WORK/link.csv ]]; then
        pass "x m through a link: its target written, the link kept"
    else
        fail "x m through a link: $(ls -l "$WORK/link.csv"; head -c 40 "$WORK/target.csv")"
    fi
    # 5. 20x5
    T resize-window -t fifo -x 20 -y 5
    if wait_for fifo 'need 80x24' 60 && screen fifo | grep -q 'q quits' && screen fifo | grep -q 'Too small: 20x5'; then
        pass "20x5: the too-small screen is whole: $(screen fifo | tr -s ' \n' ' ')"
    else
        fail "20x5: the message is cut"
    fi
    T resize-window -t fifo -x 100 -y 30
    sleep 0.5
    T send-keys -t fifo q
    if wait_file "$WORK/fifo.rc" 120; then
        [[ $(cat "$WORK/fifo.rc") == rc=0 ]] && pass "o FIFO then q: the explorer exits 0" ||
            fail "o FIFO then q: $(cat "$WORK/fifo.rc")"
    else
        fail "o FIFO then q: the explorer did not exit (blocked on the FIFO?)"
        pid=$(pgrep -P "$(T display-message -p -t fifo '#{pane_pid}')" | head -1)
        [[ -n $pid ]] && kill -9 "$pid"
    fi
fi

# ---- 3. the workspace's folder has one writer ------------------------------------------------------
start ws "$TT"
if wait_for ws '\[ready\]' 180; then
    T send-keys -t ws W C-u "$WORK/wsdir" Enter
    wait_for ws 'workspace saved' 120 && pass "W saved the workspace" || fail "W: not saved"
    pid=$(pgrep -P "$(T display-message -p -t ws '#{pane_pid}')" | head -1)
    timeout -k 10 300 "$BIN" search "$MODEL" --preset tiny --ratio 0.5 --device cpu --out "$WORK/wsdir" >"$WORK/s.out" 2>&1
    rc=$?
    if [[ $rc -eq 1 ]] && grep -q "wsdir: another bosch (pid $pid) is writing in this folder" "$WORK/s.out"; then
        pass "a search into the explorer's workspace: refused naming the explorer (pid $pid)"
    else
        fail "search into the workspace: exit $rc: $(tail -2 "$WORK/s.out")"
    fi
    T send-keys -t ws q
    maybe_for ws 'Quit\?' 5 && T send-keys -t ws y
    wait_file "$WORK/ws.rc" 120 || fail "the explorer did not exit"
    [[ ! -e $WORK/wsdir/.bosch-lock ]] && pass "the explorer's exit removed its lock" ||
        fail "wsdir/.bosch-lock left: $(cat "$WORK/wsdir/.bosch-lock")"
fi

# ---- 6. a workspace whose search cannot be resumed ---------------------------------------------------
mkdir -p "$WORK/badws"
awk '/^eval / && ++n == 2 { $2 = "0123456789abcdef" } { print }' "${BOSCH_SOURCE_DIR:-$(dirname "$0")/..}/tests/fixtures/state_v2.txt" \
    >"$WORK/badws/state"
T new-session -d -s badws -x 100 -y 30 \
    "cd '$WORK' && env TERM=$TT '$BIN' '$MODEL' --workspace '$WORK/badws' 2>'$WORK/badws.err'; echo rc=\$? > '$WORK/badws.rc'; sleep 600"
if wait_for badws 'cannot resume the search' 300; then
    pass "a state that cannot be resumed: the explorer says so"
    sleep 1
    screen badws | grep -q '\[preparing\]' && fail "still [preparing] after the failed resume" ||
        pass "not left [preparing]: $(screen badws | head -1 | tr -s ' ')"
fi
T send-keys -t badws q
wait_file "$WORK/badws.rc" 120 || fail "the explorer (bad workspace) did not exit"

if ((fails)); then
    echo "$fails check(s) failed"
    exit 1
fi
echo "all checks passed"
