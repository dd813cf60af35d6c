#!/usr/bin/env bash
# test_tui_heat.sh — the explorer's heat map (H, issue 28 item 5), driven in tmux at 80x24 on the
# real model and checked against what the screen says:
#  1. H cycles through every static head ranking of the registry (ablation = the single-head drop,
#     fisher, locality, echo), then off; the grid title names the score, the legend row (the last of
#     "What is happening") gives its name, min..max and the glyph scale, or what it waits for.
#  2. A score nothing has measured is computed on the worker: locality and echo (no evaluation)
#     arrive and the cells turn to their heat glyphs; the legend's min and max are those scores'.
# Env: BOSCH_BIN, BOSCH_MODEL (skip with 77 when absent). Needs tmux.
set -u
source "$(dirname "$0")/tui_lib.sh" test_tui_heat

start() { # SESSION COLS ROWS ARGS...
    local s=$1 cols=$2 rows=$3
    shift 3
    T new-session -d -s "$s" -x "$cols" -y "$rows" \
        "cd '$WORK' && env TERM=$TT '$BIN' '$MODEL' $*; echo EXIT=\$?; sleep 600"
}
# the grid's cells of layer rows (between the label and the statistics)
heat_cells() { screen "$1" | grep -E '^ *[0-9]+ ' | cut -c1-14 | grep -Ec '[▒▓]'; }

S=heat
start $S 80 24
wait_for $S '\[ready\]' 180 || { echo "FAIL: the model never loaded"; exit 1; }

# ablation first: not measured without a search, so it is asked of the worker
T send-keys -t $S H
wait_for $S 'heat: ablation' 30 && pass "H: the grid title names ablation" || fail "no ablation title"
wait_for $S 'ablation: (computing|not)' 30 && pass "legend: ablation is being computed" ||
    fail "ablation legend: $(screen $S | grep -E 'ablation:')"
wait_for $S 'heat: ablation not measured yet: computing it on the worker' 30 &&
    pass "the footer says it is computed on the worker" || fail "no footer message"

# fisher, then locality: locality arrives (seconds: attention statistics, no evaluation)
T send-keys -t $S H
wait_for $S 'heat: fisher' 30 && pass "H again: fisher" || fail "no fisher title"
T send-keys -t $S H
wait_for $S 'heat: locality' 30 && pass "H again: locality" || fail "no locality title"
wait_for $S 'locality: ░▒▓█ -?[0-9.e-]+\.\.[0-9.e-]+ sqrt' 300 &&
    pass "legend: locality's min..max and the glyph scale" ||
    fail "locality legend: $(screen $S | grep -E 'locality:')"
lo=$(screen $S | grep -Eo 'locality: ░▒▓█ [^ ]+' | awk '{print $3}')
# locality is 1 - the share of attention inside the window: in [0, 1]
awk -v r="$lo" 'BEGIN{split(r,a,"\\.\\."); exit !(a[1] >= 0 && a[2] <= 1 && a[1] < a[2])}' &&
    pass "locality's range $lo lies in [0, 1]" || fail "locality range '$lo'"
n=$(heat_cells $S)
((n > 0)) && pass "cells show heat levels ($n rows with ▒ or ▓)" || fail "no heat glyphs in the grid"

# echo, then off: the grid shows full / SWA again
T send-keys -t $S H
wait_for $S 'heat: echo' 30 && pass "H again: echo" || fail "no echo title"
wait_for $S 'echo: ░▒▓█ [^ ]+ sqrt' 300 && pass "legend: echo's min..max" ||
    fail "echo legend: $(screen $S | grep -E 'echo:')"
T send-keys -t $S H
wait_for $S 'heat off' 30 && pass "H after the last score: off" || fail "heat not off"
wait_for $S '██ full ░░ SWA' 30 && pass "the full / SWA legend is back" || fail "legend not back"
screen $S | grep -q 'heat:' && fail "the title still names a score" || pass "the title names no score"

T send-keys -t $S q
wait_for $S 'EXIT=0' 60 && pass "quit, exit 0" || fail "exit status"
exit $((fails > 0))
