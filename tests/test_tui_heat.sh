#!/usr/bin/env bash
# test_tui_heat.sh — the explorer's heat map (H, issue 28 item 5), driven in tmux at 80x24 on the
# real model and checked against what the screen says:
#  1. H cycles through every static head ranking of the registry (ablation = the single-head drop,
#     fisher, locality, echo), then off; the grid title names the score, the legend row (the last of
#     "What is happening") gives its name, min..max and the glyph scale, or what it waits for.
#  2. A score nothing has measured is computed on the worker: locality and echo (no evaluation)
#     arrive and the cells turn to their heat glyphs; the legend's min and max are those scores'.
#  3. Pinned heads survive a search: F pins L11 kv0 full (locality sends it SWA at rho 0.5 without
#     pins: its locality is the lowest of its layer) and L14 kv0 SWA; the form says so and runs
#     `locality`; the grid shows the pins (F / S in the cell, "F S pinned" in the legend) and the
#     final mask keeps them with 45 of 90 SWA heads; its export equals
#     `bosch search --method locality --force-full 11.0 --force-swa 14.0`'s mask.
#  4. The search's scores are reused, never measured twice: after a default `bosch` search (on a tiny
#     random model from `bosch mkmodel`, a second), H's ablation and fisher are the search's, and the
#     attention view's four rankings are all taken from the search (its head scores give ablation
#     and fisher, its refinement locality and echo): "the fisher ranking is the search's (no
#     evaluation)", none computed again.
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

# ---- 3. pinned heads survive a search -----------------------------------------------------------
"$BIN" search "$MODEL" --ratio 0.5 --preset tiny --method locality --force-full 11.0 --force-swa 14.0 \
    --out "$WORK/loc" >"$WORK/loc.out" 2>&1 || fail "bosch search with pins: $(tail -2 "$WORK/loc.out")"
grep -q 'pinned heads kept' "$WORK/loc.out" && pass "bosch search says the pins were kept" ||
    fail "no 'pinned heads kept': $(tail -2 "$WORK/loc.out")"
S=pins
start $S 80 24
wait_for $S '\[ready\]' 180 || { echo "FAIL: the model never loaded"; exit 1; }
T send-keys -t $S / 1 1 Enter F
wait_for $S 'L11 kv0 pinned full: every search keeps it' 30 && pass "F pins L11 kv0 full" || fail "no pin message"
T send-keys -t $S / 1 4 Enter F F
wait_for $S 'L14 kv0 pinned SWA' 30 && pass "F F pins L14 kv0 SWA" || fail "no SWA pin message"
screen $S | grep -Eq '^ *11  F█' && pass "the grid shows L11 kv0 pinned full (F█)" ||
    fail "L11 row: $(screen $S | grep -E '^ *11 ')"
screen $S | grep -Eq '^ *14 \[S░\]' && pass "the grid shows L14 kv0 pinned SWA (S░)" ||
    fail "L14 row: $(screen $S | grep -E '^ *14 ')"
screen $S | grep -q 'F S pinned' && pass "the legend names the pins" || fail "no pin legend"
T send-keys -t $S s Down Left Down Down # the tiny preset (the form's default is demo), the method
wait_for $S 'method +< bosch >' 10 || fail "form method field: bosch first"
screen $S | grep -Eq "window W +< 64 tokens \(tiny's\) >" || fail "tiny's window (the CLI's --preset tiny)"
form_method $S locality
wait_for $S 'pinned \(F\): 1 full, 1 SWA' 10 && pass "the form says what is pinned" || fail "form pins line"
screen $S | grep -Eq 'start from +< nothing \(a baseline cannot use a mask\) >' &&
    pass "the form's start-from field says a baseline cannot use the working mask" || fail "start-from field"
T send-keys -t $S Enter
wait_for $S '\[done\]' 300 && pass "locality ran with the pins" || fail "locality did not finish"
wait_for $S 'ρ 0.500: 45/90 KV heads SWA' 30 && pass "the final mask has 45 of 90 SWA heads" || fail "ratio line"
screen $S | grep -Eq '^ *11  F█' && pass "L11 kv0 is still full after the search" ||
    fail "L11 after: $(screen $S | grep -E '^ *11 ')"
screen $S | grep -Eq '^ *14 \[?S░' && pass "L14 kv0 is still SWA after the search" ||
    fail "L14 after: $(screen $S | grep -E '^ *14 ')"
T send-keys -t $S x m C-u "$WORK/pins.csv" Enter
wait_file "$WORK/pins.csv" 30
row() { awk -F, -v l="$2" -v h="$3" '$7 == l && $8 == h {print $NF}' "$1"; }
[[ "$(row "$WORK/pins.csv" 11 0)" == full && "$(row "$WORK/pins.csv" 14 0)" == swa ]] &&
    pass "the exported mask keeps the pins" || fail "export: 11.0 $(row "$WORK/pins.csv" 11 0), 14.0 $(row "$WORK/pins.csv" 14 0)"
[[ -s $WORK/loc/mask.csv && "$(tail -n +2 "$WORK/pins.csv" | awk -F, '{print $NF}')" == \
    "$(tail -n +2 "$WORK/loc/mask.csv" | awk -F, '{print $NF}')" ]] &&
    pass "the explorer's pinned mask = bosch search --force-full 11.0 --force-swa 14.0's" || fail "masks differ"
T send-keys -t $S q
wait_for $S 'Quit\?|EXIT=' 10
T send-keys -t $S y
wait_for $S 'EXIT=0' 30 && pass "quit, exit 0" || fail "exit status"

# ---- 4. the search's scores are reused (no second pass) -----------------------------------------
"$BIN" mkmodel "$WORK/tiny.gguf" --shape tiny >"$WORK/mk.out" 2>&1 || fail "mkmodel: $(tail -1 "$WORK/mk.out")"
S=reuse
T new-session -d -s $S -x 120 -y 40 "cd '$WORK' && env TERM=$TT '$BIN' '$WORK/tiny.gguf'; echo EXIT=\$?; sleep 600"
wait_for $S '\[ready\]' 120 || fail "the tiny model never loaded"
T send-keys -t $S s Down Left # the tiny preset
wait_for $S 'preset \(budget\) +< tiny >' 10 || fail "tiny preset"
T send-keys -t $S Enter
wait_for $S '\[done\]' 120 && pass "a default bosch search ran on the tiny model" || fail "search not done"
T send-keys -t $S H
wait_for $S "heat: ablation, the search's scores" 30 && pass "H: ablation is the search's" || fail "ablation source"
T send-keys -t $S H
wait_for $S "heat: fisher, the search's scores" 30 && pass "H: fisher is the search's" || fail "fisher source"
T send-keys -t $S A
wait_for $S 'with the mask' 60 || fail "no attention view"
T send-keys -t $S Escape
for r in locality echo ablation fisher; do
    wait_for $S "the $r ranking is the search's \(no evaluation\)" 60 &&
        pass "attention view: $r taken from the search" || fail "$r not from the search"
done
screen $S | grep -q 'ranking is ready' && fail "a ranking was computed again" || pass "no ranking computed again"
T send-keys -t $S q
wait_for $S 'Quit\?|EXIT=' 10
T send-keys -t $S y
wait_for $S 'EXIT=0' 30 && pass "quit, exit 0" || fail "exit status"
exit $((fails > 0))
