#!/usr/bin/env bash
# test_servable_cli.sh — the servable view and mode on the real default model (issue 14, item 3):
#  1. `bosch eval`: the servable_kv column (the KV bytes of the mask's servable projection: a layer
#     SWA only if all its KV heads are) equals a hand computation from the model's shapes as
#     `bosch info` prints them, for a hand-written mask (layers 0-9 all SWA, layers 10-14 two SWA
#     heads of three); kv_bytes too; `--servable` scores the projection and writes its rows as
#     METHOD+servable with that ratio and those bytes;
#  2. `bosch search --granularity layer`: the mask has every layer all full or all SWA and
#     round(0.5 x 30) = 15 SWA layers; a run stopped by SIGTERM after 12 evaluations and continued
#     with --resume ends with the uninterrupted run's mask.csv byte for byte (it recomputes every
#     later evaluation, so this is also the determinism check); the state records "granularity
#     layer"; bad values are refused;
#  3. `bosch compare --methods bosch_layer,intr`: bosch_layer has held-out rows and a whole-layer
#     mask with 15 SWA layers.
# Env: BOSCH_BIN, BOSCH_MODEL (skips, exit 77, without the model).
set -u
BIN=${BOSCH_BIN:-build/bosch}
MODEL=${BOSCH_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
if [[ ! -x "$BIN" ]]; then echo "FAIL: $BIN is not an executable"; exit 1; fi
if [[ ! -f "$MODEL" ]]; then echo "skip: model $MODEL not found"; exit 77; fi
WORK=$(mktemp -d /tmp/test_servable.XXXXXX)
BG=
trap '[[ -n "$BG" ]] && kill -9 "$BG" 2>/dev/null; rm -rf "$WORK"' EXIT
fails=0
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The model's shapes, from `bosch info`.
"$BIN" info "$MODEL" >"$WORK/info" 2>&1 || fail "bosch info -> $?"
shape() { awk -v k="$1:" '$1 == k { print $2 }' "$WORK/info"; }
L=$(shape n_layer) H=$(shape n_head_kv) D=$(shape head_dim) NH=$(shape n_head)
NAME=$(awk -F': ' '$1 == "name" { print $2 }' "$WORK/info")
[[ -n "$L" && -n "$H" && -n "$D" ]] || fail "bosch info gave no shapes"

# ---- 1. eval: servable_kv by hand ------------------------------------------------------------
W=32 S=4 T=256
R=$(awk -v l="$L" -v h="$H" 'BEGIN { printf "%.6f", (10 * h + 10) / (l * h) }')
{
    echo "model,n_layer,n_head_kv,window,sinks,ratio,layer,kv_head,q_heads,attention"
    for ((l = 0; l < L; l++)); do
        for ((h = 0; h < H; h++)); do
            q=$((h * NH / H))
            for ((j = 1; j < NH / H; j++)); do q="$q;$((h * NH / H + j))"; done
            att=full
            ((l < 10)) && att=swa
            ((l >= 10 && l < 15 && h < 2)) && att=swa
            echo "$NAME,$L,$H,$W,$S,$R,$l,$h,$q,$att"
        done
    done
} >"$WORK/mask.csv"
"$BIN" eval "$MODEL" --mask "$WORK/mask.csv" --samples 1 --lengths $T --device cpu --quiet --servable \
    --method hand --out "$WORK/ev.csv" >"$WORK/ev.out" 2>"$WORK/ev.err" || fail "eval -> $? ($(cat "$WORK/ev.err"))"
slot=$((D * 2 * 2))                                        # keys and values, bf16 (the default --kv)
want_head=$(((10 * H + 10) * (W + S) * slot + (L * H - 10 * H - 10) * T * slot))
want_serv=$((10 * H * (W + S) * slot + (L - 10) * H * T * slot))
read -r got_head got_serv < <(awk '$1 == "niah_single" { print $6, $7; exit }' "$WORK/ev.out")
[[ "$got_head" == "$want_head" && "$got_serv" == "$want_serv" ]] &&
    pass "eval: kv_bytes $got_head and servable_kv $got_serv equal the hand computation" ||
    fail "eval: kv_bytes $got_head servable_kv $got_serv, want $want_head and $want_serv"
grep -q "^# servable projection (one window per layer): 10 of $L layers SWA" "$WORK/ev.out" &&
    pass "eval: the header names the 10 SWA layers of the projection" || fail "eval: header: $(sed -n 2p "$WORK/ev.out")"
want_ratio=$(awk -v l="$L" 'BEGIN { printf "%.6f", 10 / l }')
row=$(grep '^hand+servable,' "$WORK/ev.csv")
[[ "$row" == "hand+servable,$want_ratio,niah_single,$T,"*",$want_serv" ]] &&
    pass "eval --servable: CSV row $row" || fail "eval --servable: CSV row '$row'"

# ---- 2. search --granularity layer -------------------------------------------------------------
SARGS=(--ratio 0.5 --granularity layer --samples 2 --length 256 --window 32 --budget3 3 --restarts 0
    --device cpu)
# whole_layers MASK: the number of SWA layers, or "bad LAYER" when a layer is mixed
whole_layers() {
    awk -F, 'NR > 1 { n[$7] += ($10 == "swa"); c[$7]++ }
        END { k = 0; for (l in n) { if (n[l] != 0 && n[l] != c[l]) { print "bad " l; exit } k += (n[l] == c[l]) } print k }' "$1"
}
"$BIN" search "$MODEL" "${SARGS[@]}" --out "$WORK/s1" >"$WORK/s1.out" 2>&1 || fail "search 1 -> $?"
n=$(whole_layers "$WORK/s1/mask.csv")
[[ "$n" == $(((L + 1) / 2)) ]] && pass "search --granularity layer: whole layers, $n SWA" ||
    fail "search --granularity layer: $n SWA layers (want $(((L + 1) / 2)))"
grep -q 'granularity=layer' "$WORK/s1.out" && pass "summary names the granularity" || fail "summary: $(cat "$WORK/s1.out")"
grep -qx 'granularity layer' "$WORK/s1/state" && pass "the state records the granularity" ||
    fail "no 'granularity layer' in the state"
# stopped by SIGTERM after 12 evaluations, resumed
"$BIN" search "$MODEL" "${SARGS[@]}" --out "$WORK/s3" >"$WORK/s3.out" 2>&1 &
BG=$!
for ((i = 0; i < 600; i++)); do
    [[ -f "$WORK/s3/state" ]] && (($(grep -c '^eval ' "$WORK/s3/state") >= 12)) && break
    sleep 0.1
done
kill -TERM "$BG" 2>/dev/null
wait "$BG"
rc=$?
BG=
[[ $rc -eq 1 && ! -f "$WORK/s3/mask.csv" ]] && pass "SIGTERM stops the search (exit 1, no mask yet)" ||
    fail "SIGTERM: exit $rc, mask present: $([[ -f "$WORK/s3/mask.csv" ]] && echo yes || echo no)"
"$BIN" search "$MODEL" --resume "$WORK/s3" --device cpu >"$WORK/s3r.out" 2>&1 || fail "resume -> $?"
# (the resumed run recomputes every evaluation after the 12th, so this also checks that a second
# run gives the same mask)
cmp -s "$WORK/s1/mask.csv" "$WORK/s3/mask.csv" && pass "the resumed search ends with the same mask" ||
    fail "the resumed search's mask differs"
expect2() { # expect2 MESSAGE ARGS...: exit 2 with MESSAGE on stderr
    local msg=$1
    shift
    "$BIN" search "$MODEL" "$@" >"$WORK/x.out" 2>&1
    local r=$?
    [[ $r -eq 2 ]] && grep -qF -- "$msg" "$WORK/x.out" && pass "refused: $msg" || fail "$* -> $r: $(cat "$WORK/x.out")"
}
expect2 "--granularity: bad value 'rows' (need head or layer)" --ratio 0.5 --out "$WORK/x" --granularity rows
expect2 "--granularity layer is for BOSCH, not the baseline 'intr'" --ratio 0.5 --out "$WORK/x2" \
    --granularity layer --method intr --device cpu

# ---- 3. compare: bosch_layer beside the layer baselines -----------------------------------------
"$BIN" compare "$MODEL" --preset ci --methods bosch_layer,intr --ratios 0.5 --aprime 0 --device cpu \
    --out "$WORK/c" >"$WORK/c.out" 2>"$WORK/c.err" || fail "compare -> $? ($(tail -2 "$WORK/c.err"))"
grep -q '^heldout,bosch_layer,0.5000,all,' "$WORK/c/results.csv" && pass "compare: bosch_layer has held-out rows" ||
    fail "compare: no held-out row of bosch_layer"
m=$(ls "$WORK"/c/mask_bosch_layer_*.csv 2>/dev/null | head -1)
[[ -n "$m" && $(whole_layers "$m") == $(((L + 1) / 2)) ]] && pass "compare: bosch_layer's mask is whole layers" ||
    fail "compare: bosch_layer mask '$m': $([[ -n "$m" ]] && whole_layers "$m")"

[[ $fails -eq 0 ]] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
