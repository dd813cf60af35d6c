#!/usr/bin/env bash
# test_tui_soak.sh — the short explorer soak for CI: tests/soak_tui.sh with 600 random keys and 10
# resizes while a search runs (the full soak, 10000 keys and 100 resizes, with its wall-time budget,
# is scripts/bench-ui, run by hand on a quiet machine; figures in docs/explorer.md). No wall time is
# asserted here: the UI thread's CPU time per wake-up is (soak_tui.sh). Exits as soak_tui.sh (0, 1, or 77 when tmux or the model is missing).
export KEYS=${KEYS:-600} RESIZES=${RESIZES:-10}
exec bash "$(dirname "$0")/soak_tui.sh" "$@"
