#!/usr/bin/env bash
# test_tui_interop.sh — the explorer's interop exports and the DuoAttention load, in tmux on the
# real model: toggle layer 29 whole (T) and one head of layer 28, then
#   x d  writes a DuoAttention folder whose TSV has exactly those 4 zeros and config.json W and S;
#   x h  writes the Hugging Face patch with layer 29 alone "sliding_attention" (the servable
#        projection: layer 28 keeps a full head);
#   x r  writes the TensorRT-LLM kv_cache_config with the window on layer 29 only;
#   x s  writes the scores of the static rankings the attention view computed (A), checked against
#        the mask of `bosch search --method locality`;
#   o    loads a DuoAttention folder (a hand-written one with layer 0 all streaming) into the grid,
#        and DIR@0.5 cuts a gate file at ratio 0.5 (ceil(0.5 * 89) = 45 SWA heads).
# Env: BOSCH_BIN, BOSCH_MODEL (skip with 77 when absent); tmux (skip with 77 when absent).
set -u
source "$(dirname "$0")/tui_lib.sh" test_tui_interop
S=interop
T new-session -d -s $S -x 100 -y 40 "cd '$WORK' && env TERM=$TT '$BIN' '$MODEL'; echo EXIT=\$?; sleep 600"
wait_for $S 'KV heads SWA' 60 || { fail "explorer did not start"; exit 1; }
T send-keys -t $S T Up ' '
wait_for $S '4/90 KV heads SWA' 5 && pass "layer 29 whole and one head of 28 SWA" || fail "edits"

T send-keys -t $S x d C-u "$WORK/duo" Enter
wait_for $S 'duo written to' 10 && pass "x d message" || fail "x d message"
tsv="$WORK/duo/full_attention_heads.tsv"
if [[ -f $tsv ]]; then
    [[ $(wc -l <"$tsv") -eq 30 && $(grep -o 0 "$tsv" | wc -l) -eq 4 && $(sed -n 30p "$tsv") == $'0\t0\t0' &&
        $(sed -n 29p "$tsv") == $'0\t1\t1' ]] && pass "TSV: 30 rows, layer 29 all 0, layer 28 kv0 0" ||
        fail "TSV content: $(tail -2 "$tsv" | tr '\n\t' '| ')"
    grep -q '"recent_size": *[0-9]' "$WORK/duo/config.json" && pass "config.json has recent_size" ||
        fail "config.json: $(cat "$WORK/duo/config.json")"
else
    fail "x d wrote no TSV"
fi

T send-keys -t $S x h C-u "$WORK/hf.json" Enter
wait_for $S 'hf written to' 10 && pass "x h message" || fail "x h message"
n_sl=$(grep -c '"sliding_attention"' "$WORK/hf.json" 2>/dev/null)
last=$(tr -d ' \n' <"$WORK/hf.json" 2>/dev/null | grep -o '"layer_types":\[[^]]*\]' | tr ',' '\n' | tail -1)
[[ $n_sl -eq 1 && $last == *sliding_attention* ]] && pass "HF patch: only layer 29 sliding" ||
    fail "HF patch: $n_sl sliding, last '$last'"

T send-keys -t $S x r C-u "$WORK/trt.json" Enter
wait_for $S 'trtllm written to' 10 && pass "x r message" || fail "x r message"
win=$(tr -d ' \n' <"$WORK/trt.json" 2>/dev/null | grep -o '"max_attention_window":\[[^]]*\]')
[[ $win =~ ^\"max_attention_window\":\[(8192,){29}[0-9]+\]$ && $win != *,8192] ]] &&
    pass "TensorRT-LLM: window on layer 29 only" || fail "TensorRT-LLM: $win"

mkdir -p "$WORK/pat"
{ printf '0\t0\t0\n'; for i in $(seq 1 29); do printf '1\t1\t1\n'; done; } >"$WORK/pat/full_attention_heads.tsv"
echo '{"sink_size": 2, "recent_size": 32}' >"$WORK/pat/config.json"
T send-keys -t $S o C-u "$WORK/pat" Enter
wait_for $S 'loaded DuoAttention' 10 && pass "o loads a DuoAttention folder" || fail "o duo message"
wait_for $S '3/90 KV heads SWA, W 32' 5 && pass "the grid has its 3 SWA heads, W 32" || fail "o duo mask"
{ for i in $(seq 0 89); do printf '%s' "0.$(printf '%02d' $((i * 37 % 90)))"; [[ $((i % 3)) -eq 2 ]] && echo || printf '\t'; done; } \
    >"$WORK/pat/full_attention_heads.tsv"
T send-keys -t $S o C-u "$WORK/pat@0.5" Enter
wait_for $S '45/90 KV heads SWA' 10 && pass "o DIR@0.5 cuts the gates at ratio 0.5" || fail "o DIR@0.5"
T send-keys -t $S o C-u "$WORK/pat" Enter
wait_for $S 'not all 0 or 1' 10 && pass "gates without a ratio are refused, naming why" || fail "o gates refusal"

# x s: the static rankings the attention view computes (A starts them), as a scores folder. With
# the working mask's window at tiny's 64 (no search: the rankings use tiny's calibration split), the
# locality column cut at rho = 0.5 (the 45 lowest go SWA, ties by lower index) must be the mask
# `bosch search --method locality --preset tiny --ratio 0.5` finds: the same ranking, measured apart.
# (a fresh explorer: the mask loaded above has 2 sinks, tiny's search has none)
T send-keys -t $S q
wait_for $S 'quit|Quit|EXIT=' 5 >/dev/null; T send-keys -t $S y
S=scores
T new-session -d -s $S -x 100 -y 40 "cd '$WORK' && env TERM=$TT '$BIN' '$MODEL'; echo EXIT=\$?; sleep 600"
wait_for $S 'KV heads SWA' 60 || fail "explorer (scores) did not start"
T send-keys -t $S x s C-u "$WORK/early" Enter
wait_for $S 'no static ranking is computed yet' 10 && pass "x s before any ranking: refused, naming why" ||
    fail "x s refusal"
T send-keys -t $S : C-u 'window 64' Enter
wait_for $S 'W 64' 5 || fail ":window 64"
T send-keys -t $S A
wait_for $S 'locality +[-0-9.e]+ #[0-9]+' 240 && pass "the attention view computed the locality ranking" ||
    fail "no locality ranking"
T send-keys -t $S Escape
T send-keys -t $S x s C-u "$WORK/scores" Enter
wait_for $S "rankings' scores" 20 && pass "x s message" || fail "x s message"
"$BIN" search "$MODEL" --ratio 0.5 --preset tiny --method locality --out "$WORK/loc" >"$WORK/loc.out" 2>&1 ||
    fail "bosch search --method locality: $(tail -2 "$WORK/loc.out")"
if python3 - "$WORK" <<'PY'
import csv, json, sys
w = sys.argv[1]
rows = list(csv.DictReader(open(f"{w}/scores/scores.csv")))
assert len(rows) == 90, len(rows)
v = [float(r["locality"]) for r in rows]
j = json.load(open(f"{w}/scores/locality.json"))
assert all(abs(j[f"{r['layer']}-{r['kv_head']}"] - x) <= 1e-9 for r, x in zip(rows, v))
swa = set(sorted(range(90), key=lambda i: (v[i], i))[:45])
got = {int(r["layer"]) * 3 + int(r["kv_head"]) for r in csv.DictReader(open(f"{w}/loc/mask.csv"))
       if r["attention"] == "swa"}
assert got == swa, (sorted(got ^ swa))
PY
then
    pass "exported locality scores cut at 0.5 = bosch search --method locality's mask"
else
    fail "exported locality scores do not give the search's mask"
fi

T send-keys -t $S q
wait_for $S 'quit|Quit|EXIT=' 5 >/dev/null; T send-keys -t $S y
if [[ $fails -gt 0 ]]; then echo "$fails failed"; exit 1; fi
echo "all explorer interop checks passed"
