#!/usr/bin/env bash
# test_out_paths.sh — every --out is resolved before any work (issue 30, item 1), on the real model
# (SmolLM2-135M, 30 layers x 3 KV heads):
#  1. a FIFO, a socket and a character device (mknod c 1 3, made here; that sub-case is skipped
#     with a message where mknod is not permitted) as --out of eval, import --format duo, export
#     --format hf|trtllm|duo, search and compare: refused (exit 1) naming the path, no evaluation
#     run, the node still what it was (the old code renamed its temporary file over it: `--out
#     /dev/null` as root made /dev/null a regular file);
#  2. a symbolic link as --out of eval, import, export hf|trtllm, and a link to a folder for export
#     duo: the link's target is written, the link stays a link (the old code replaced the link and
#     left the target unchanged);
#  3. "-" and /dev/stdout: written to standard output as a stream (import -, export hf /dev/stdout,
#     eval /dev/stdout), no file named "-" made.
# Every node is made by the test in its scratch folder, never the system's. A 300 s timeout guards
# each command against a hang (not a speed bound).
# Env: BOSCH_BIN, BOSCH_MODEL (exit 77 without the model).
set -u
BIN=$(realpath "${BOSCH_BIN:-build/bosch}")
MODEL=$(realpath "${BOSCH_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}" 2>/dev/null)
if [[ ! -x "$BIN" ]]; then echo "FAIL: $BIN is not an executable"; exit 1; fi
if [[ ! -f "$MODEL" ]]; then echo "skip: model not found"; exit 77; fi
WORK=$(mktemp -d /tmp/test_out_paths.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
fails=0
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
kind() { stat -c %F "$1" 2>/dev/null || echo missing; }

# an all-full mask of SmolLM2's shape, and its DuoAttention folder
echo "model,n_layer,n_head_kv,window,sinks,ratio,layer,kv_head,q_heads,attention" >mask.csv
for l in $(seq 0 29); do
    for h in 0 1 2; do
        a=full
        ((l == 3)) && a=swa
        echo "m,30,3,128,0,0.033333,$l,$h,$((3 * h));$((3 * h + 1));$((3 * h + 2)),$a" >>mask.csv
    done
done
if ! timeout -k 10 300 "$BIN" export mask.csv --format duo --out duo --model "$MODEL" >out 2>&1; then
    echo "FAIL: export duo of the test's mask: $(cat out)"
    exit 1
fi
EVAL=(eval "$MODEL" --samples 1 --lengths 256 --device cpu --quiet)
SARGS=(--preset tiny --samples 1 --length 256 --ratio 0.5 --device cpu)

# refused NODE WHAT TEXT ARGS...: bosch ARGS exits 1 saying TEXT, runs no evaluation, and NODE is
# still of the kind it was
refused() {
    local node=$1 what=$2 text=$3 before rc
    shift 3
    before=$(kind "$node")
    timeout -k 10 300 "$BIN" "$@" >out 2>&1
    rc=$?
    if [[ $rc -eq 1 ]] && grep -qF -- "$text" out && ! grep -q '^niah_single\|^full,\|search, ratio' out &&
        [[ $(kind "$node") == "$before" ]]; then
        pass "$what: refused, $before kept: $(head -1 out)"
    else
        fail "$what: exit $rc (want 1 and '$text'), $node is now '$(kind "$node")' (was '$before'); output:"
        head -5 out
    fi
}

# ---- 1. nodes the test makes ---------------------------------------------------------------------
mkfifo fifo
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' sock
nodes=(fifo sock)
declare -A what=([fifo]="a FIFO" [sock]="a socket" [null]="a character device")
if mknod null c 1 3 2>/dev/null; then
    nodes+=(null)
else
    echo "skip: mknod null c 1 3 is not permitted here: the character-device sub-case is not tested"
fi
for n in "${nodes[@]}"; do
    w=${what[$n]}
    refused "$n" "eval --out $w" "$WORK/$n: is $w, not a regular file" "${EVAL[@]}" --out "$WORK/$n"
    refused "$n" "import --out $w" "$n: is $w, not a regular file" import duo --format duo --out "$n" --model "$MODEL"
    for f in hf trtllm; do
        refused "$n" "export $f --out $w" "$n: is $w, not a regular file" export mask.csv --format $f --out "$n" \
            --model "$MODEL"
    done
    refused "$n" "export duo --out $w" "$n: not a directory" export mask.csv --format duo --out "$n" --model "$MODEL"
    refused "$n" "search --out $w" "$n: not a directory" search "$MODEL" "${SARGS[@]}" --out "$n"
    refused "$n" "compare --out $w" "$n: not a directory" compare "$MODEL" --preset quick --out "$n"
done
# through a link: the message says where it led, the link and the node stay
ln -s fifo to-fifo
refused to-fifo "eval --out a link to a FIFO" "to-fifo -> fifo: is a FIFO" "${EVAL[@]}" --out to-fifo
[[ $(kind fifo) == fifo ]] && pass "the FIFO behind the link is still a FIFO" || fail "fifo is now $(kind fifo)"

# ---- 2. symbolic links: the target is written, the link stays ------------------------------------
# linked NAME TARGET ARGS...: bosch ARGS (which write NAME, a link to TARGET) succeeds; NAME is still
# a link, TARGET a regular file with new content
linked() {
    local name=$1 target=$2 rc
    shift 2
    echo old >"$target"
    ln -sf "$target" "$name"
    timeout -k 10 300 "$BIN" "$@" >out 2>&1
    rc=$?
    if [[ $rc -eq 0 && -L $name && -f $target && ! -L $target && $(head -c 3 "$target") != old ]]; then
        pass "$name -> $target: target written, link kept ($(head -c 40 "$target" | head -1))"
    else
        fail "$name -> $target: exit $rc, $name is '$(kind "$name")', $target starts '$(head -c 20 "$target")'"
        head -5 out
    fi
}
mkdir -p sub
linked l-eval.csv sub/t-eval.csv "${EVAL[@]}" --out l-eval.csv
linked l-import.csv sub/t-import.csv import duo --format duo --out l-import.csv --model "$MODEL"
linked l-hf.json sub/t-hf.json export mask.csv --format hf --out l-hf.json --model "$MODEL"
linked l-trt.json sub/t-trt.json export mask.csv --format trtllm --out l-trt.json --model "$MODEL"
# a relative link in another folder
mkdir -p d2 && ln -s ../sub/t-rel.csv d2/l.csv && echo old >sub/t-rel.csv
if timeout -k 10 300 "$BIN" import duo --format duo --out d2/l.csv --model "$MODEL" >out 2>&1 && [[ -L d2/l.csv ]] &&
    head -1 sub/t-rel.csv | grep -q '^model,'; then
    pass "a relative link in another folder: its target written"
else
    fail "relative link: $(kind d2/l.csv), $(head -1 sub/t-rel.csv); $(tail -2 out)"
fi
# export duo through a link to a folder
mkdir -p realduo && ln -s realduo linkduo
if timeout -k 10 300 "$BIN" export mask.csv --format duo --out linkduo --model "$MODEL" >out 2>&1 && [[ -L linkduo ]] &&
    [[ -s realduo/full_attention_heads.tsv ]]; then
    pass "export duo through a link to a folder: written into it, the link kept"
else
    fail "export duo via a link: $(kind linkduo); $(ls realduo); $(tail -2 out)"
fi
ls -a . sub d2 | grep -q '\.tmp\.' && fail "temporary files left: $(ls -a . sub d2 | grep tmp)"

# ---- 3. streams -----------------------------------------------------------------------------------
if timeout -k 10 300 "$BIN" import duo --format duo --out - --model "$MODEL" >stream.out 2>out &&
    head -1 stream.out | grep -q '^model,n_layer,n_head_kv' && (($(wc -l <stream.out) == 91)) && [[ ! -e ./- ]]; then
    pass "import --out -: the mask on standard output (91 lines), no file '-'"
else
    fail "import --out -: $(head -2 stream.out); $(tail -2 out); $(ls)"
fi
if timeout -k 10 300 "$BIN" export mask.csv --format hf --out /dev/stdout --model "$MODEL" >stream.out 2>out &&
    grep -q '"layer_types"' stream.out; then
    pass "export hf --out /dev/stdout: the JSON on standard output"
else
    fail "export hf --out /dev/stdout: $(head -c 200 stream.out); $(tail -2 out)"
fi
if timeout -k 10 300 "$BIN" "${EVAL[@]}" --out /dev/stdout >stream.out 2>out && grep -q '^method,' stream.out &&
    grep -q '^full,0.000000,niah_single,256,' stream.out; then
    pass "eval --out /dev/stdout: the results CSV on standard output"
else
    fail "eval --out /dev/stdout: $(head -3 stream.out); $(tail -2 out)"
fi

echo "$fails failure(s)"
[[ $fails -eq 0 ]]
