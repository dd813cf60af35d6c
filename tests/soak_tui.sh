#!/usr/bin/env bash
# soak_tui.sh — explorer soak (issue 18, item 7): while a search runs, send KEYS random keys and
# RESIZES window resizes (80x24 up to 200x60) through tmux; the explorer must stay alive until the
# final quit, exit 0, and its UI thread must never work longer than STALL_MS (200) ms of its own CPU
# time per wake-up, as measured inside the program (`bosch explore --ui-stats FILE`: from poll()
# returning to the next poll(), so a long UI-thread operation shows up as an input stall). The CPU
# time of the UI thread is what it does, about the same on a busy machine; the wall time of a
# wake-up is not (other processes run in between), so it is bounded only when WALL_MS is given:
# scripts/bench-ui does that on a quiet machine (issue 30, item 7: no test asserts a wall time).
#
#   tests/soak_tui.sh                       # the full soak: 10000 keys, 100 resizes
#   KEYS=800 RESIZES=10 tests/soak_tui.sh   # the short version (tests/test_tui_soak.sh, in CI)
#
# Env: BOSCH_BIN, BOSCH_MODEL (skip with 77 when absent), KEYS, RESIZES, SEED (of the key
# sequence), BATCH (keys per tmux send-keys), STALL_MS (the UI thread's CPU budget per wake-up, 200),
# WALL_MS (the wall budget per wake-up; unset: not checked). Needs tmux (else 77).
# Prints the figures (keys, resizes, seconds, UI iterations, max / p99 / p50 busy ms, max CPU ms, load).
# Keys that would end the explorer are not sent (q, Q, Ctrl-C, Ctrl-\, Ctrl-Z); everything else
# is: every mode's keys, dialogs, edits, search control, exports and loads with random file names
# (inside a scratch folder), held-out evaluations and asks.
set -u
KEYS=${KEYS:-10000}
RESIZES=${RESIZES:-100}
SEED=${SEED:-18}
BATCH=${BATCH:-8}
STALL_MS=${STALL_MS:-200}
WALL_MS=${WALL_MS:-}
source "$(dirname "$0")/tui_lib.sh" soak_tui
T new-session -d -s soak -x 80 -y 24 \
    "cd '$WORK' && env TERM=$TT '$BIN' explore '$MODEL' --ui-stats '$WORK/ui-stats.csv' 2>'$WORK/stderr'; echo rc=\$? > '$WORK/rc'; sleep 3600"
wait_for soak '\[ready\]' 180 || { echo "FAIL: the model never loaded"; exit 1; }
PID=$(pgrep -P "$(T display-message -p -t soak '#{pane_pid}')" | head -1)
T send-keys -t soak s
sleep 0.3
T send-keys -t soak Down Left Enter # the tiny preset (the form's default is demo)
wait_for soak '\[(preparing|searching)\]' 60 || { echo "FAIL: the search did not start"; exit 1; }

# The key alphabet (tmux key names). Letters other than q / Q, digits, punctuation the keys use
# (':' the command line: without q it cannot type :q), Enter, Escape, Tab, BSpace, arrows, paging,
# Home/End, F1 (not F10: it quits), Ctrl-L, Ctrl-U.
keys=(a b c d e f g h i j k l m n o p r s t u v w x y z A B C D E F G H I J K L M N O P R S T U V W X Y Z
    0 1 2 3 4 5 6 7 8 9 Space Enter Escape Tab BSpace Up Down Left Right PPage NPage Home End F1 C-l C-u
    '?' '+' '-' / : . _)
nk=${#keys[@]}
RANDOM=$SEED
every=$((RESIZES > 0 ? KEYS / RESIZES : KEYS + 1))
sent=0 resized=0 dead=0 t0=$SECONDS
while ((sent < KEYS)); do
    batch=()
    for ((i = 0; i < BATCH && sent < KEYS; i++)); do
        batch+=("${keys[RANDOM % nk]}")
        sent=$((sent + 1))
        if ((resized < RESIZES && sent % every == 0)); then
            T send-keys -t soak "${batch[@]}"
            batch=()
            T resize-window -t soak -x $((80 + RANDOM % 121)) -y $((24 + RANDOM % 37))
            resized=$((resized + 1))
        fi
    done
    ((${#batch[@]})) && T send-keys -t soak "${batch[@]}"
    if ! kill -0 "$PID" 2>/dev/null; then
        dead=1
        break
    fi
    sleep 0.02
done
secs=$((SECONDS - t0))
if ((dead)); then
    echo "FAIL: the explorer died after $sent keys and $resized resizes: $(cat "$WORK/rc" 2>/dev/null)"
    screen soak
    cat "$WORK/stderr"
    exit 1
fi
echo "sent $sent keys and $resized resizes in $secs s; the explorer is alive"
screen soak | head -1

# The final quit: Escape closes any dialog or prompt, q quits (y confirms an unsaved search).
T resize-window -t soak -x 80 -y 24
for try in 1 2 3 4 5; do
    T send-keys -t soak Escape
    sleep 0.3
    T send-keys -t soak q
    sleep 0.5
    [[ -s $WORK/rc ]] && break
    T send-keys -t soak y
    sleep 1
    [[ -s $WORK/rc ]] && break
done
wait_file "$WORK/rc" 120 # a hang guard only: on a busy machine the quit can take a while
fails=0
rc=$(cat "$WORK/rc" 2>/dev/null)
if [[ $rc == rc=0 ]]; then echo "ok: exit status 0"; else
    echo "FAIL: exit status: ${rc:-the explorer did not quit}"
    screen soak
    fails=1
fi
if [[ -s $WORK/ui-stats.csv ]]; then
    IFS=, read -r n max p99 p50 mean over cpu < <(tail -1 "$WORK/ui-stats.csv")
    echo "ui thread: $n wake-ups, busy max $max ms, p99 $p99 ms, p50 $p50 ms, mean $mean ms, $over over 200 ms;" \
        "CPU max $cpu ms"
    if [[ -n $cpu ]] && awk -v m="$cpu" -v b="$STALL_MS" 'BEGIN { exit !(m <= b) }'; then
        echo "ok: no UI-thread work over $STALL_MS ms of CPU time in one wake-up"
    else
        echo "FAIL: the UI thread worked ${cpu:-?} ms of CPU time in one wake-up (budget $STALL_MS ms)"
        fails=1
    fi
    if [[ -n $WALL_MS ]]; then
        if awk -v m="$max" -v b="$WALL_MS" 'BEGIN { exit !(m <= b) }'; then
            echo "ok: no input stall over $WALL_MS ms (wall time)"
        else
            echo "FAIL: the UI thread was busy $max ms at once (wall budget $WALL_MS ms)"
            fails=1
        fi
    fi
else
    echo "FAIL: no --ui-stats file written"
    fails=1
fi
echo "load: $(uptime)"
exit $fails
