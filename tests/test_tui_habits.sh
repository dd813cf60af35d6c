#!/usr/bin/env bash
# test_tui_habits.sh — the explorer's htop / vi habits, driven in tmux on the real model (as
# test_tui.sh): mouse clicks and the wheel, `/` (and F3) to jump to a layer, the `:` command line,
# F1 and F10, the config file (palette, key binding, a bad line's message), at 80x24 and at 120x40.
#
# Mouse: tmux cannot make a mouse event from the command line (send-keys -M only forwards one a
# binding received), so the test types the bytes a terminal sends for one: the X10 encoding that
# ncurses asks for with TERM=tmux-256color (kmous=\E[M): ESC [ M, then 32 + button (0 press,
# 3 release, 64 wheel up, 65 wheel down), 33 + column, 33 + row (send-keys -H). ncurses decodes
# them exactly as from a real terminal. The hit-testing itself is unit-tested
# (tests/test_layout.c test_hit, tests/test_ui_request.c test_mouse).
#
# Env: BOSCH_BIN, BOSCH_MODEL (skip with 77 when absent). Needs tmux (skip with 77 when absent).
set -u
source "$(dirname "$0")/tui_lib.sh" test_tui_habits

# start SESSION COLS ROWS CONFIG_TEXT: bosch with its own XDG_CONFIG_HOME holding CONFIG_TEXT
# ("" = no file); the shell prints EXIT=<status> after it.
start() {
    local s=$1 cols=$2 rows=$3
    mkdir -p "$WORK/$s/bosch"
    [[ -n "$4" ]] && printf '%s\n' "$4" >"$WORK/$s/bosch/explorer.conf"
    T new-session -d -s "$s" -x "$cols" -y "$rows" \
        "cd '$WORK' && env XDG_CONFIG_HOME='$WORK/$s' TERM=$TT '$BIN' '$MODEL'; echo EXIT=\$?; sleep 600"
}
# mouse SESSION BUTTON ROW COL: one X10 mouse report (0-based row and column of the pane).
mouse() { T send-keys -t "$1" -H 1b 5b 4d "$(printf '%02x' $((32 + $2)))" "$(printf '%02x' $((33 + $4)))" \
    "$(printf '%02x' $((33 + $3)))"; }
# click SESSION ROW COL: press and release, as a terminal reports a click.
click() { mouse "$1" 0 "$2" "$3"; mouse "$1" 3 "$2" "$3"; }
title() { screen "$1" | sed -n 2p; }

# --- 1. 80x24: mouse, wheel, '/', ':' commands, F1, F10 -------------------------------------------
S=small
start $S 80 24 ""
wait_for $S '\[ready\]' 180 || { echo "FAIL: the model never loaded"; exit 1; }
# At 80x24 the grid shows layers 10-29 on rows 3-22; KV head h's cell is columns 4+3h .. 6+3h.
click $S 12 8 # row 12 = layer 19, column 8 = KV head 1
wait_for $S '^─ L19 kv1 \(q3-5\) full' 5 && pass "80x24: a click moves the cursor to L19 kv1" || fail "click move"
screen $S | grep -Eq '^ 19  ██\[██\]██ ' && pass "80x24: the cursor is drawn on the clicked cell" || fail "click cursor"
click $S 12 9 # the same cell again: toggles it
wait_for $S '^ 19  ██\[░░\]██ ' 5 && pass "80x24: a second click toggles the cell to SWA" || fail "click toggle"
wait_for $S 'ρ 0.011: 1/90 KV heads SWA' 5 && pass "80x24: the ratio follows the click" || fail "click ratio"
click $S 12 9
wait_for $S '^ 19  ██\[██\]██ ' 5 && pass "80x24: a third click toggles it back" || fail "click toggle back"
click $S 5 30 # layer 12's statistics: the layer, the same head
wait_for $S '^─ L12 kv1' 5 && pass "80x24: a click on a layer's statistics moves to that layer" || fail "click row"
mouse $S 64 10 10 # wheel up: 3 layers, the cursor with them
wait_for $S '^─ L9 kv1 .* 7-26/30' 5 && pass "80x24: the wheel scrolls the grid up 3 layers" || fail "wheel up"
mouse $S 65 10 10
mouse $S 65 10 10
wait_for $S '^─ L15 kv1 .* 10-29/30' 5 && pass "80x24: the wheel scrolls down, stopping at the last layer" ||
    fail "wheel down"

T send-keys -t $S / 4
wait_for $S '^/4 +layer 0-29, Enter jumps' 5 && pass "80x24: / opens the layer prompt on the footer" ||
    fail "jump prompt"
T send-keys -t $S Enter
wait_for $S '^─ L4 kv1 .* 4-23/30' 5 && pass "80x24: /4 jumps to layer 4 and scrolls to it" || fail "jump"
T send-keys -t $S / 9 9 Enter
wait_for $S 'no layer 99 \(the model has layers 0-29\)' 5 && pass "80x24: /99 is refused with the layer range" ||
    fail "jump refused"

T send-keys -t $S F3 2 Enter
wait_for $S '^─ L2 kv1' 5 && pass "80x24: F3 (htop's search) jumps too" || fail "F3 jump"

T send-keys -t $S : w i n d o w Space 3 2
wait_for $S '^:window 32' 5 && pass "80x24: : opens the command line on the footer" || fail "command prompt"
T send-keys -t $S Enter
wait_for $S 'ρ 0.000: 0/90 KV heads SWA, W 32' 5 && pass ":window 32 sets the working mask's window" ||
    fail ":window"
T send-keys -t $S : 2 7 Enter
wait_for $S '^─ L27 kv1' 5 && pass ":27 jumps to layer 27" || fail ":N"
T send-keys -t $S Space
wait_for $S '1/90 KV heads SWA' 5 || fail "toggle before export"
T send-keys -t $S : e x p o r t Space m a s k Space "$WORK/m.csv" Enter
wait_for $S 'mask written to' 5 && pass ":export mask FILE writes the mask" || fail ":export mask"
if [[ -f "$WORK/m.csv" ]]; then
    awk -F, 'NR > 1 && $4 != 32 { bad = 1 } END { exit bad }' "$WORK/m.csv" && pass "the exported mask has window 32" ||
        fail "exported window: $(sed -n 2p "$WORK/m.csv")"
    [[ $(grep -c ',27,1,3;4;5,swa$' "$WORK/m.csv") -eq 1 && $(grep -c ',swa$' "$WORK/m.csv") -eq 1 ]] &&
        pass "the exported mask has L27 kv1 SWA only" || fail "exported cells"
else
    fail ":export wrote no file"
fi
T send-keys -t $S Space # back to all full, then :load brings the SWA head back
wait_for $S '0/90 KV heads SWA' 5 || fail "toggle before load"
T send-keys -t $S : l o a d Space "$WORK/m.csv" Enter
wait_for $S 'loaded .*m.csv' 5 && wait_for $S '1/90 KV heads SWA, W 32' 5 && pass ":load FILE loads the mask back" ||
    fail ":load"
T send-keys -t $S : e x p o r t Space l a y e r s Enter
wait_for $S 'Export the per-layer table' 5 && pass ":export layers without a file asks for one" ||
    fail ":export prompt"
T send-keys -t $S Escape
T send-keys -t $S : f r o b Enter
wait_for $S "unknown command 'frob' \(:help lists them\)" 5 && pass "an unknown command says so" || fail ":frob"
T send-keys -t $S : r a t i o Space 2 Enter
wait_for $S "ratio: bad value '2' \(need a number in \[0, 1\]\)" 5 && pass ":ratio 2 is refused" || fail ":ratio 2"
T send-keys -t $S : r a t i o Space 0 . 6 Enter
wait_for $S 'next search: ratio 0.600' 5 || fail ":ratio 0.6"
T send-keys -t $S s
wait_for $S 'ratio \(SWA share\) +< 0.600 >' 5 && pass ":ratio 0.6 is the start form's ratio" || fail "form ratio"
T send-keys -t $S Escape
T send-keys -t $S : h e l p Enter
wait_for $S ':ratio R +the next search' 5 && screen $S | grep -q ':export NAME \[FILE\]' &&
    pass ":help lists the commands" || fail ":help"
T send-keys -t $S x
T send-keys -t $S F1
wait_for $S 'toggle the KV head under the cursor' 5 && pass "F1 opens the help" || fail "F1"
screen $S | grep -q '? F1 P q Q F10' && pass "the help lists F1 and F10" || fail "help F-keys"
T send-keys -t $S Escape
sleep 0.3
T send-keys -t $S F10
wait_for $S '^EXIT=0' 30 && pass "F10 quits (exit 0)" || fail "F10"
[[ $(T display-message -p -t $S '#{alternate_on}') == 0 ]] && pass "F10: alternate screen left" || fail "F10 screen"
T kill-session -t $S

# --- 2. 120x40, blue-orange palette and a key binding from the config file ------------------------
S=wide
start $S 120 40 "# test config
palette = blue-orange
bind.K = toggle
color.title = white,blue"
wait_for $S '\[ready\]' 180 || fail "wide: not ready"
# all 30 layers fit: layer l on row 3 + l
click $S 8 11 # layer 5, KV head 2
wait_for $S '^─ L5 kv2' 5 && pass "120x40: a click moves the cursor to L5 kv2" || fail "wide click"
T send-keys -t $S K
wait_for $S '^  5  ██ ██\[░░\] ' 5 && pass "bind.K = toggle: K toggles the head" || fail "bound key"
# the SWA cell in xterm orange (208), the full ones blue (33), no red
row=$(T capture-pane -e -p -t $S | sed -n 9p)
grep -Eq $'\e\\[38;5;208m(\e\\[[0-9;]*m)*░' <<<"$row" && pass "blue-orange: the SWA cell is orange (colour 208)" ||
    fail "palette SWA: $(cat -v <<<"$row" | head -c 300)"
grep -q $'\e\\[38;5;33m' <<<"$row" && pass "blue-orange: full cells blue (colour 33)" || fail "palette full"
grep -Eq $'\e\\[31m(\e\\[[0-9;]*m)*░' <<<"$row" && fail "blue-orange: a red SWA cell" || pass "blue-orange: no red SWA cell"
T send-keys -t $S '?'
wait_for $S '░░ +orange: sliding window' 5 && pass "the help's legend says orange" || fail "legend orange"
T send-keys -t $S Escape
sleep 0.3
T send-keys -t $S : q Enter
wait_for $S '^EXIT=0' 30 && pass ":q quits (exit 0)" || fail ":q"
T kill-session -t $S

# The default palette for comparison: the SWA cell red.
S=red
start $S 120 40 ""
wait_for $S '\[ready\]' 180 || fail "red: not ready"
T send-keys -t $S Space
wait_for $S '^ 29 \[░░\]' 5 || fail "red: toggle"
row=$(T capture-pane -e -p -t $S | sed -n 33p) # layer 29 on row 32
grep -Eq $'\e\\[31m(\e\\[[0-9;]*m)*░' <<<"$row" && pass "blue-red (default): the SWA cell is red" ||
    fail "default palette: $(cat -v <<<"$row" | head -c 300)"
T send-keys -t $S K # not bound without the config: nothing happens
sleep 0.5
screen $S | grep -q '1/90 KV heads SWA' && pass "K is unbound without the config" || fail "K without config"
T send-keys -t $S F10
wait_for $S '^EXIT=0' 30 || fail "red: F10"
T kill-session -t $S

# --- 3. A bad config line: the file, line and value, before the terminal is touched; exit 2 -------
S=badcfg
start $S 100 30 "mouse = on
palette = green"
wait_for $S '^EXIT=2' 30 && pass "a bad config line: exit 2" || fail "bad config exit"
T capture-pane -p -J -t $S | grep -qF "bosch: $WORK/$S/bosch/explorer.conf: line 2: palette: bad value 'green' (blue-red or blue-orange)" &&
    pass "a bad config line names the file, the line and the value" || fail "bad config message: $(screen $S | head -3)"
T kill-session -t $S

if ((fails)); then
    echo "$fails check(s) failed"
    exit 1
fi
echo "all explorer habit checks passed"
