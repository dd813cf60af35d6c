#!/usr/bin/env python3
"""bench_llamacpp.py — the peer numbers for our CPU forward pass: llama.cpp (llama-cpp-python) on
the same GGUF, same machine, n_threads=2: load time, prefill tokens/s at given prompt lengths,
decode tokens/s. Single run each (after one short warm-up evaluation).

It also writes each prompt's text to PREFIX_N.txt so our side can be timed on the same text:
  python3 scripts/bench_llamacpp.py --lengths 1024 4096 --write-prompts /tmp/bench_prompt
  ./build/bosch generate --prompt "$(cat /tmp/bench_prompt_1024.txt)" -n 64   # prints prefill/decode tokens/s

The prompt text is made-up prose (numbered sentences), cut to exactly N tokens of the model's
tokenizer. Decode is timed over --n-decode single-token evaluations (the prose's next tokens; the
cost does not depend on which tokens) that follow the first prompt length given.
Usage: python3 scripts/bench_llamacpp.py [--model PATH] [--lengths 1024 4096] [--n-decode 64]
Needs: llama-cpp-python.
"""
import argparse
import os
import time

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def prose(n_sent):
    words = ["river", "window", "engine", "garden", "letter", "number", "harbour", "lantern", "market",
             "signal", "valley", "ticket", "morning", "station", "pencil", "mirror"]
    rng = np.random.default_rng(3)
    out = []
    for i in range(n_sent):
        a, b, c = rng.choice(words, 3)
        out.append("Sentence %d says that the %s near the %s was painted like a %s." % (i, a, b, c))
    return " ".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--lengths", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--n-decode", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--write-prompts", metavar="PREFIX")
    args = ap.parse_args()

    from llama_cpp import Llama
    n_ctx = max(args.lengths) + args.n_decode + 16
    t0 = time.perf_counter()
    llm = Llama(model_path=args.model, n_ctx=n_ctx, n_threads=args.threads,
                n_threads_batch=args.threads, n_batch=512, n_ubatch=512, verbose=False)
    load_s = time.perf_counter() - t0
    print("llama.cpp %s, %d threads: load %.3f s" % (os.path.basename(args.model), args.threads, load_s))

    all_toks = llm.tokenize(prose(3000).encode(), add_bos=False)
    assert len(all_toks) >= max(args.lengths) + args.n_decode, "prompt text too short"
    llm.eval(all_toks[:16])  # warm-up
    llm.reset()
    for n in args.lengths:
        toks = all_toks[:n]
        if args.write_prompts:
            with open("%s_%d.txt" % (args.write_prompts, n), "w") as f:
                f.write(llm.detokenize(toks).decode("utf-8", errors="replace"))
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(toks)
        dt = time.perf_counter() - t0
        print("prefill %5d tokens: %.3f s, %.1f tokens/s" % (n, dt, n / dt))
        if n == args.lengths[0]:
            t0 = time.perf_counter()
            for i in range(args.n_decode):  # the token values do not change the cost
                llm.eval([all_toks[n + i]])
            dt = time.perf_counter() - t0
            print("decode %d tokens after %d: %.3f s, %.1f tokens/s" % (args.n_decode, n, dt, args.n_decode / dt))


if __name__ == "__main__":
    main()
