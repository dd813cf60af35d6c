#!/usr/bin/env python3
"""bench_torch_peer.py — the peer numbers for `bosch bench --device cuda`: the same model shape in
PyTorch / Hugging Face transformers (LlamaForCausalLM, SDPA attention, bf16 weights and
activations, random weights), all heads full attention.

Measures, per context length T: prefill tokens/s (one forward over T random token ids into a
fresh KV cache, logits only for the last position, best of --reps after one warm-up) and decode
tokens/s (--decode greedy steps at context T, one token at a time with the cache), and the peak
GPU memory (torch.cuda.max_memory_allocated). Shape defaults are SmolLM2-135M's (30 layers,
n_embd 576, 9/3 heads, n_ff 1536, vocab 49152, RoPE base 100000, tied embeddings).

Usage: python3 scripts/bench_torch_peer.py [--lengths 8192] [--decode 32] [--reps 3] [--json FILE]
Needs: torch with CUDA, transformers (>= 4.40). Prints one line per length and writes JSON.
"""
import argparse
import json
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lengths", default="8192", help="comma-separated context lengths")
    ap.add_argument("--decode", type=int, default=32, help="decode steps timed at each length")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--layers", type=int, default=30)
    args = ap.parse_args()
    try:
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError as e:
        print("bench_torch_peer: needs torch and transformers (%s)" % e, file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("bench_torch_peer: no CUDA device", file=sys.stderr)
        return 77
    lengths = [int(x) for x in args.lengths.split(",")]
    cfg = LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=args.layers,
                      num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=max(lengths) + args.decode + 8,
                      rope_theta=100000.0, rms_norm_eps=1e-5, tie_word_embeddings=True, hidden_act="silu")
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(device="cuda", dtype=torch.bfloat16).eval()
    gen = torch.Generator(device="cuda").manual_seed(1)
    results = []

    def prefill(ids):
        try:
            return model(input_ids=ids, use_cache=True, logits_to_keep=1)
        except TypeError:  # older transformers
            return model(input_ids=ids, use_cache=True, num_logits_to_keep=1)

    with torch.inference_mode():
        for T in lengths:
            ids = torch.randint(500, 48000, (1, T), device="cuda", generator=gen)
            torch.cuda.reset_peak_memory_stats()
            prefill(ids[:, : min(T, 512)])  # warm-up
            torch.cuda.synchronize()
            best_p, best_d = float("inf"), float("inf")
            for _ in range(args.reps):
                t0 = time.perf_counter()
                out = prefill(ids)
                torch.cuda.synchronize()
                best_p = min(best_p, time.perf_counter() - t0)
                past = out.past_key_values
                nxt = out.logits[:, -1:].argmax(-1)
                t0 = time.perf_counter()
                for _ in range(args.decode):
                    out = model(input_ids=nxt, past_key_values=past, use_cache=True)
                    past = out.past_key_values
                    nxt = out.logits[:, -1:].argmax(-1)
                torch.cuda.synchronize()
                best_d = min(best_d, time.perf_counter() - t0)
                del out, past
            r = {"length": T, "prefill_tok_s": T / best_p, "prefill_s": best_p,
                 "decode_tok_s": args.decode / best_d if args.decode else 0.0,
                 "peak_bytes": torch.cuda.max_memory_allocated(), "torch": torch.__version__,
                 "device": torch.cuda.get_device_name(0)}
            results.append(r)
            print("torch sdpa bf16  T=%6d  prefill %10.1f tok/s (%.3f s)  decode %8.1f tok/s  peak %.2f GiB" % (
                T, r["prefill_tok_s"], best_p, r["decode_tok_s"], r["peak_bytes"] / 2**30), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
