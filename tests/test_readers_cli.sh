#!/usr/bin/env bash
# test_readers_cli.sh — the bounds and messages of the file readers, through `bosch eval` on the real
# model (SmolLM2-135M: 30 layers x 3 KV heads, 9 query heads, context 8192):
#  1. a 200 MB mask file (90 good rows, then a sparse hole) is refused before it is read, naming its
#     size and the model's limit (the issue saw 28 s, 2.3 GB): the refusing run reads (the kernel's
#     rchar, tests/read_bytes.py) no more than a good run of the same command plus 1 MiB, where
#     reading the file would add 200 MB. No wall time is asserted (issue 30, item 7);
#  2. a mask with one row too many is refused on that row's line, with the limit;
#  3. a wrong q_heads on the first row is blamed on line 2 with the model's group ('0;1;2');
#  4. sinks beyond the context length, from the mask file or from --sinks, are refused naming the
#     value and 8192.
# Env: BOSCH_BIN, BOSCH_MODEL (exit 77 without the model), BOSCH_SOURCE_DIR (for tests/read_bytes.py).
set -u
BIN=${BOSCH_BIN:-build/bosch}
MODEL=${BOSCH_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
if [[ ! -x "$BIN" ]]; then echo "FAIL: $BIN is not an executable"; exit 1; fi
if [[ ! -f "$MODEL" ]]; then echo "skip: model $MODEL not found"; exit 77; fi
SRC=${BOSCH_SOURCE_DIR:-$(dirname "$0")/..}
WORK=$(mktemp -d /tmp/test_readers_cli.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fails=0
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# mask FILE [SINKS] [FIRST_QHEADS]: a valid SmolLM2 mask (all full) with those fields
mask() {
  local f=$1 sinks=${2:-0} q0=${3:-0;1;2}
  echo "model,n_layer,n_head_kv,window,sinks,ratio,layer,kv_head,q_heads,attention" >"$f"
  for l in $(seq 0 29); do
    for h in 0 1 2; do
      q="$((3 * h));$((3 * h + 1));$((3 * h + 2))"
      [[ $l -eq 0 && $h -eq 0 ]] && q=$q0
      echo "m,30,3,128,$sinks,0.000000,$l,$h,$q,full" >>"$f"
    done
  done
}
# expect NAME SUBSTRING ARGS...: bosch ARGS fails (exit != 0) and says SUBSTRING
expect_refusal() {
  local name=$1 text=$2
  shift 2
  python3 "$SRC/tests/read_bytes.py" "$WORK/read" "$BIN" "$@" >"$WORK/out" 2>&1
  rc=$?
  read_bytes=$(cat "$WORK/read")
  if [[ $rc -ne 0 ]] && grep -qF -- "$text" "$WORK/out"; then
    pass "$name: exit $rc after reading $read_bytes bytes: $(tail -1 "$WORK/out")"
  else
    fail "$name: exit $rc, wanted a refusal saying '$text'; output: $(tail -3 "$WORK/out")"
  fi
}
EVAL=(eval "$MODEL" --samples 1 --lengths 256 --out -)

# what a good run reads (its model, data and mask), for the bound of part 1
mask "$WORK/ok.csv"
python3 "$SRC/tests/read_bytes.py" "$WORK/read" "$BIN" "${EVAL[@]}" --mask "$WORK/ok.csv" --split calibration \
  >"$WORK/out" 2>&1
rc=$?
base=$(cat "$WORK/read")
[[ $rc -eq 0 ]] && pass "a good mask evaluates (reading $base bytes)" || fail "a good mask: exit $rc: $(tail -3 "$WORK/out")"

mask "$WORK/big.csv"
truncate -s 200M "$WORK/big.csv"
expect_refusal "200 MB mask" "209715200 bytes, more than the" "${EVAL[@]}" --mask "$WORK/big.csv"
grep -qF "30 layers x 3 KV heads" "$WORK/out" && pass "the message names the model's shape" ||
  fail "no shape in: $(cat "$WORK/out")"
if ((read_bytes <= base + 1048576)); then
  pass "the 200 MB file was not read: $read_bytes bytes read (a good run: $base)"
else
  fail "refusing 200 MB read $read_bytes bytes (a good run: $base; want at most 1 MiB more)"
fi

mask "$WORK/extra.csv"
echo "m,30,3,128,0,0.000000,0,0,0;1;2,full" >>"$WORK/extra.csv"
expect_refusal "one row too many" "line 92: more than 91 rows" "${EVAL[@]}" --mask "$WORK/extra.csv"

mask "$WORK/qh.csv" 0 "0;1"
expect_refusal "wrong first q_heads" "line 2: field 'q_heads': '0;1' should be '0;1;2'" "${EVAL[@]}" --mask "$WORK/qh.csv"

mask "$WORK/sinks.csv" 9000
expect_refusal "mask sinks 9000" "field 'sinks': 9000 is more than the model's context length 8192" \
  "${EVAL[@]}" --mask "$WORK/sinks.csv"
expect_refusal "--sinks 9000" "sinks 9000 is more than the model's context length 8192" "${EVAL[@]}" --all-swa \
  --sinks 9000

[[ $fails -eq 0 ]] && echo "all passed" || { echo "$fails failed"; exit 1; }
