# tui_lib.sh — the tmux preamble of the explorer's tests (test_tui.sh, test_tui_quit.sh,
# soak_tui.sh), sourced by them: `source tests/tui_lib.sh NAME`.
#
# It checks the program, the model and tmux (exit 77 to skip when the model or tmux is missing),
# makes BIN and MODEL absolute, sets the UTF-8 locale and TT (the terminal type inside tmux: tmux's
# own when its terminfo entry is installed), makes the scratch folder WORK (/tmp/NAME.XXXXXX) and
# a tmux server of its own (socket bosch-NAME-PID) that the exit trap kills, and defines:
#   T ARGS...                      tmux on that server (kept up by a session _keep)
#   pass MSG / fail MSG            print ok / FAIL (fail counts in $fails)
#   screen SESSION                 the pane's text
#   wait_for SESSION REGEX SECS    poll the pane until grep -E matches (else print it, return 1)
#   poll_for GETTER SESSION REGEX SECS   the same on what `GETTER SESSION` prints
#   wait_file FILE SECS            poll until FILE is not empty
#   maybe_for SESSION REGEX SECS   wait_for for what may rightly not come (a question asked only
#                                  sometimes): waits SECS exactly, prints nothing, returns 1
# The timeouts of wait_for, poll_for and wait_file guard against a hang; they are not a speed bound
# (issue 30, item 7: no test asserts a wall time). On a busy machine a screen can take seconds to
# change, so each waits at least TUI_WAIT_MIN (60) seconds whatever SECS says.
# Env: BOSCH_BIN (the built program), BOSCH_MODEL (the GGUF), TUI_WAIT_MIN.
BIN=${BOSCH_BIN:-build/bosch}
MODEL=${BOSCH_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
if [[ ! -f "$MODEL" ]]; then echo "skip: model $MODEL not found"; exit 77; fi
if ! command -v tmux >/dev/null; then echo "skip: tmux not installed"; exit 77; fi
if [[ ! -x "$BIN" ]]; then echo "FAIL: $BIN is not an executable"; exit 1; fi
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
MODEL=$(cd "$(dirname "$MODEL")" && pwd)/$(basename "$MODEL")

export LC_ALL=C.UTF-8 LANG=C.UTF-8
TT=tmux-256color
infocmp "$TT" >/dev/null 2>&1 || TT=screen-256color
WORK=$(mktemp -d "/tmp/${1:?tui_lib.sh: give the test name}.XXXXXX")
SOCK="bosch-$1-$$"
T() { tmux -L "$SOCK" -f /dev/null "$@"; }
cleanup() { T kill-server >/dev/null 2>&1; rm -rf "$WORK"; }
trap cleanup EXIT
# A session that outlives every other: tmux's server exits with its last session, and a test that
# kills its only live session (or outlasts another's `sleep`, on a loaded machine) would lose it.
T new-session -d -s _keep -x 80 -y 24 "sleep 86400"

fails=0
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
screen() { T capture-pane -p -t "$1"; }
TUI_WAIT_MIN=${TUI_WAIT_MIN:-60}
guard_s() { echo $(($1 > TUI_WAIT_MIN ? $1 : TUI_WAIT_MIN)); } # SECS, at least TUI_WAIT_MIN
poll_for() { # GETTER SESSION REGEX SECS: poll `GETTER SESSION` until grep -E matches
    local secs
    secs=$(guard_s "$4")
    local deadline=$((SECONDS + secs))
    while ((SECONDS < deadline)); do
        if "$1" "$2" | grep -Eq -- "$3"; then return 0; fi
        sleep 0.2
    done
    echo "--- timed out after $secs s waiting for /$3/ in $2 ($1); screen:"
    screen "$2"
    return 1
}
wait_for() { poll_for screen "$@"; }
maybe_for() {
    local deadline=$((SECONDS + $3))
    while ((SECONDS < deadline)); do
        if screen "$1" | grep -Eq -- "$2"; then return 0; fi
        sleep 0.2
    done
    return 1
}
# form_method SESSION NAME: on the explorer's start form with the method field selected, press Left
# (the method registry backwards) until the field reads NAME, waiting for each step to show; at
# most 32 steps, wherever a build's added registry rows put NAME.
method_field() { screen "$1" | grep -Eo 'method +< [a-z_]+ >'; } # SESSION: the form's method field
form_method() {
    local s=$1 want=$2 cur
    for _ in $(seq 1 32); do
        cur=$(method_field "$s")
        [[ $cur =~ "< $want >" ]] && return 0
        T send-keys -t "$s" Left
        for _ in $(seq 1 100); do [[ "$(method_field "$s")" != "$cur" ]] && break; sleep 0.1; done
    done
}
wait_file() {
    local deadline=$((SECONDS + $(guard_s "$2")))
    while ((SECONDS < deadline)); do
        [[ -s "$1" ]] && return 0
        sleep 0.05
    done
    return 1
}
