#!/usr/bin/env python3
"""bench_torch_peer.py — the peer numbers for `bosch bench --device cuda`: the same model shape in
PyTorch / Hugging Face transformers (LlamaForCausalLM, SDPA attention, random weights, all heads
full attention, DynamicCache), bf16 weights and activations on CUDA.

Shape: SmolLM2-135M's, checked in the script against the structure it builds: 30 layers, n_embd
576, 9 query heads and 3 KV heads of head_dim 64, n_ff 1536 (SwiGLU), vocab 49152, RoPE base
100000 (checked on the model's own inverse frequencies), RMSNorm eps 1e-5, tied embeddings;
134,515,008 parameters, the element count of the 272 tensors of
models/SmolLM2-135M-Instruct.Q4_1.gguf as the PyPI `gguf` reader lists them. `--gguf FILE` also
compares the shape against a GGUF's metadata (needs the `gguf` package).

Per context length T:
  prefill  one forward of T random token ids (batch 1) into a fresh KV cache, logits for the last
           position only; best of --reps after one untimed warm-up at the same T.
  decode   --decode greedy steps of --batch sequences together at context T (the batch-1 prefill's
           cache repeated --batch times), one token per sequence and step; tokens/s =
           batch * steps / time; best of --reps (the cache is cropped back to T between reps)
           after 2 untimed steps.
Attention is checked to go through torch.nn.functional.scaled_dot_product_attention: the script
counts its calls during one prefill and one decode step (must be one per layer).

Usage:
  python3 scripts/bench_torch_peer.py [--lengths 8192] [--decode 32] [--batch 1] [--reps 3]
                                      [--json FILE] [--device cuda|cpu] [--layers 30]
  --device cpu exists only to verify that the script runs (small settings, e.g.
  `--device cpu --lengths 256,512 --decode 4 --reps 1 --layers 2`); its numbers are no peer.
Peak memory: torch.cuda.max_memory_allocated over the timed prefills, and over the timed decode
(which includes DynamicCache's copy of the whole cache at every step: it appends with torch.cat).
Needs: torch (with CUDA for --device cuda) and transformers: run on the CPU with 5.17 (cache
kwarg past_key_values) and 5.24 (kwarg cache); the 4.x branches (rope_theta, num_logits_to_keep,
DynamicCache() without config) are written but were not run.
Exit status: 0 all lengths measured; 1 a length or a check failed; 2 bad arguments; 77 torch or
transformers missing, or no CUDA device for --device cuda (skip).

stdout, in order:
  peer: torch V transformers V device NAME dtype D attn sdpa cache CLASS (kwarg K)
  peer: shape layers L n_embd 576 heads 9/3 head_dim 64 n_ff 1536 vocab 49152 rope_base 100000
        rms_eps 1e-05 tied; params N (SmolLM2-135M GGUF: 134515008, equal|DIFFERENT
        [or, --layers other than 30: "; L layers: expected E"])            [one line]
  peer: gguf FILE matches | peer: gguf FILE MISMATCH ...            (only with --gguf)
  peer: sdpa prefill C calls/forward (is_causal B, attn_mask M, k heads H); decode C calls/step ...
  torch sdpa D  T=...  prefill X tok/s (S s)  decode(bN) Y tok/s  peak prefill P GiB decode Q GiB
                                                                    [one line per length]
  or: torch sdpa D  T=...  FAILED: message
  peer: K of N lengths measured in S s
JSON (--json FILE, rewritten after each length, so a killed run leaves the lengths it finished):
  {"meta": {"torch", "transformers", "device" (GPU or CPU name), "device_kind" ("cuda"|"cpu"),
            "dtype", "layers", "batch", "decode_steps", "reps", "params", "params_gguf_135m",
            "cache_class", "cache_kwarg", "sdpa": {"prefill": {...}, "decode": {...}}
            (each: "calls", "is_causal", "attn_mask" (null or its shape), "q_shape", "k_shape",
            "enable_gqa"), "verification_only" (true on cpu), "wall_s" (whole run, at the end)},
   "results": [{"length", "batch", "prefill_tok_s", "prefill_s", "decode_tok_s", "decode_s"
                (time of all timed steps of the best rep), "decode_steps",
                "prefill_peak_bytes", "decode_peak_bytes" (null on cpu)} or
               {"length", "error"}]}
"""
import argparse
import inspect
import json
import os
import platform
import sys
import time

# The shape of SmolLM2-135M (GGUF metadata llama.*; see the module doc).
SHAPE = dict(n_layer=30, n_embd=576, n_head=9, n_head_kv=3, head_dim=64, n_ff=1536, n_vocab=49152,
             rope_base=100000.0, rms_eps=1e-5)
GGUF_135M_PARAMS = 134515008  # element count of all tensors of SmolLM2-135M-Instruct.Q4_1.gguf


def expected_params(layers):
    """Parameters of the shape with `layers` layers, embedding tied (counted once)."""
    e, f, kv = SHAPE["n_embd"], SHAPE["n_ff"], SHAPE["n_head_kv"] * SHAPE["head_dim"]
    per_layer = 2 * e * e + 2 * e * kv + 3 * e * f + 2 * e  # q,o + k,v + gate,up,down + 2 norms
    return SHAPE["n_vocab"] * e + e + layers * per_layer  # embedding + final norm + layers


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="PyTorch/transformers SDPA peer of `bosch bench --device cuda` (SmolLM2-135M shape).",
        epilog="--device cpu only verifies that the script runs; its numbers are not a peer. "
               "Output lines and JSON keys: see the top of this file.")
    ap.add_argument("--lengths", default="8192", help="comma-separated context lengths (default 8192)")
    ap.add_argument("--decode", type=int, default=32, help="decode steps timed at each length (0: none)")
    ap.add_argument("--batch", type=int, default=1, help="sequences decoded together (default 1)")
    ap.add_argument("--reps", type=int, default=3, help="timed repetitions, best kept (default 3)")
    ap.add_argument("--layers", type=int, default=SHAPE["n_layer"], help="layers (default 30)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                    help="cuda (default) for the peer; cpu only to verify the script")
    ap.add_argument("--dtype", choices=("auto", "bf16", "fp32"), default="auto",
                    help="auto: bf16 on cuda, fp32 on cpu")
    ap.add_argument("--gguf", help="also compare the shape with this GGUF's metadata (needs `gguf`)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    try:
        args.lengths = [int(x) for x in args.lengths.split(",") if x.strip()]
    except ValueError:
        ap.error("--lengths: not a comma-separated list of integers: %r" % args.lengths)
    if not args.lengths or min(args.lengths) < 2:
        ap.error("--lengths: each length must be >= 2")
    if args.decode < 0 or args.batch < 1 or args.reps < 1 or args.layers < 1:
        ap.error("--decode >= 0, --batch >= 1, --reps >= 1, --layers >= 1")
    return args


def make_model(torch, transformers, args, dtype):
    """The LlamaForCausalLM of SHAPE with SDPA attention, random weights, on the device, eval mode."""
    from transformers import LlamaConfig, LlamaForCausalLM
    params = inspect.signature(LlamaConfig.__init__).parameters
    kw = dict(vocab_size=SHAPE["n_vocab"], hidden_size=SHAPE["n_embd"], intermediate_size=SHAPE["n_ff"],
              num_hidden_layers=args.layers, num_attention_heads=SHAPE["n_head"],
              num_key_value_heads=SHAPE["n_head_kv"], head_dim=SHAPE["head_dim"], hidden_act="silu",
              max_position_embeddings=max(8192, max(args.lengths) + args.decode + 8),
              rms_norm_eps=SHAPE["rms_eps"], tie_word_embeddings=True, attention_bias=False,
              mlp_bias=False, attn_implementation="sdpa")
    if "rope_parameters" in params:  # transformers 5.x
        kw["rope_parameters"] = {"rope_type": "default", "rope_theta": SHAPE["rope_base"]}
    else:  # 4.x
        kw["rope_theta"] = SHAPE["rope_base"]
    cfg = LlamaConfig(**kw)
    if getattr(cfg, "_attn_implementation", None) != "sdpa":
        cfg._attn_implementation = "sdpa"
    torch.manual_seed(args.seed)
    # Built under the default dtype, as from_pretrained(dtype=...) does: weights in `dtype`, while
    # RoPE's inverse frequencies stay fp32 (model.to(bf16) would round them to bf16).
    saved = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(args.device):
            model = LlamaForCausalLM(cfg)
    finally:
        torch.set_default_dtype(saved)
    return model.eval()


def check_shape(torch, model, layers, dtype):
    """Compares the built model with SHAPE (and its weights' dtype); returns (mismatch strings,
    parameter count, tied embedding counted once)."""
    bad = []
    m, e, kv = model.model, SHAPE["n_embd"], SHAPE["n_head_kv"] * SHAPE["head_dim"]

    def want(what, got, exp):
        if got != exp:
            bad.append("%s: %r, expected %r" % (what, got, exp))

    want("layers", len(m.layers), layers)
    want("embedding", tuple(m.embed_tokens.weight.shape), (SHAPE["n_vocab"], e))
    want("tied lm_head", model.lm_head.weight.data_ptr() == m.embed_tokens.weight.data_ptr(), True)
    want("attn implementation", model.config._attn_implementation, "sdpa")
    for i, L in enumerate(m.layers):
        a, f = L.self_attn, L.mlp
        want("layer %d q" % i, tuple(a.q_proj.weight.shape), (SHAPE["n_head"] * SHAPE["head_dim"], e))
        want("layer %d k" % i, tuple(a.k_proj.weight.shape), (kv, e))
        want("layer %d v" % i, tuple(a.v_proj.weight.shape), (kv, e))
        want("layer %d o" % i, tuple(a.o_proj.weight.shape), (e, SHAPE["n_head"] * SHAPE["head_dim"]))
        want("layer %d head_dim" % i, a.head_dim, SHAPE["head_dim"])
        want("layer %d gate" % i, tuple(f.gate_proj.weight.shape), (SHAPE["n_ff"], e))
        want("layer %d up" % i, tuple(f.up_proj.weight.shape), (SHAPE["n_ff"], e))
        want("layer %d down" % i, tuple(f.down_proj.weight.shape), (e, SHAPE["n_ff"]))
        x = torch.linspace(-4, 4, 9, dtype=torch.float32, device=f.gate_proj.weight.device)
        want("layer %d act is SiLU" % i, float((f.act_fn(x) - x * torch.sigmoid(x)).abs().max()) < 1e-5, True)
        want("layer %d bias" % i, any(x.bias is not None for x in (a.q_proj, a.k_proj, f.up_proj)), False)
        for nm in ("input_layernorm", "post_attention_layernorm"):
            want("layer %d %s eps" % (i, nm), getattr(L, nm).variance_epsilon, SHAPE["rms_eps"])
    want("final norm eps", m.norm.variance_epsilon, SHAPE["rms_eps"])
    want("weight dtypes", sorted({str(p.dtype) for p in model.parameters()}), [str(dtype)])
    # RoPE base from the inverse frequencies the model really uses: inv_freq[i] = base^(-2i/head_dim).
    inv = m.rotary_emb.inv_freq.detach().double().cpu()
    ref = 1.0 / SHAPE["rope_base"] ** (torch.arange(0, SHAPE["head_dim"], 2, dtype=torch.float64) / SHAPE["head_dim"])
    if inv.shape != ref.shape or float((inv / ref - 1).abs().max()) > 1e-6:
        bad.append("RoPE inverse frequencies differ from base %g (got %s...)" % (SHAPE["rope_base"], inv[:3].tolist()))
    seen, n = set(), 0
    for p in model.parameters():
        if p.data_ptr() not in seen:
            seen.add(p.data_ptr())
            n += p.numel()
    want("parameters", n, expected_params(layers))
    return bad, n


def check_gguf(path, layers):
    """Compares SHAPE with a GGUF's llama.* metadata and its tensor element count; returns mismatches."""
    import gguf
    import numpy as np
    r = gguf.GGUFReader(path)

    def val(key):
        f = r.fields.get(key)
        return None if f is None else f.contents()

    arch = val("general.architecture")
    exp = {"block_count": SHAPE["n_layer"], "embedding_length": SHAPE["n_embd"],
           "attention.head_count": SHAPE["n_head"], "attention.head_count_kv": SHAPE["n_head_kv"],
           "feed_forward_length": SHAPE["n_ff"], "rope.dimension_count": SHAPE["head_dim"],
           "rope.freq_base": SHAPE["rope_base"], "attention.layer_norm_rms_epsilon": SHAPE["rms_eps"]}
    bad = []
    for k, v in exp.items():
        g = val("%s.%s" % (arch, k))
        if g is None or abs(float(g) - v) > 1e-6 * max(1.0, abs(v)):
            bad.append("%s.%s = %r, script uses %r" % (arch, k, g, v))
    names = [t.name for t in r.tensors]
    emb = next((t for t in r.tensors if t.name == "token_embd.weight"), None)
    if emb is None or int(max(emb.shape)) != SHAPE["n_vocab"]:
        bad.append("token_embd.weight vocab %r, script uses %d" % (
            None if emb is None else int(max(emb.shape)), SHAPE["n_vocab"]))
    if "output.weight" in names:
        bad.append("output.weight present: embeddings not tied")
    total = sum(int(np.prod(t.shape)) for t in r.tensors)
    if layers == SHAPE["n_layer"] and total != expected_params(layers):
        bad.append("tensor elements %d, script's model has %d" % (total, expected_params(layers)))
    return bad


class SdpaProbe:
    """Counts calls of torch.nn.functional.scaled_dot_product_attention while active and records the
    first call's arguments (is_causal, mask shape, q/k shapes, enable_gqa)."""

    def __init__(self, torch):
        self.F, self.orig, self.info = torch.nn.functional, None, None

    def __enter__(self):
        self.orig = self.F.scaled_dot_product_attention
        self.info = {"calls": 0}
        orig, info = self.orig, self.info

        def probe(q, k, v, attn_mask=None, *a, **kw):
            if info["calls"] == 0:
                info.update(is_causal=bool(kw.get("is_causal", False)),
                            attn_mask=None if attn_mask is None else list(attn_mask.shape),
                            q_shape=list(q.shape), k_shape=list(k.shape),
                            enable_gqa=bool(kw.get("enable_gqa", False)))
            info["calls"] += 1
            return orig(q, k, v, attn_mask, *a, **kw)

        self.F.scaled_dot_product_attention = probe
        return self

    def __exit__(self, *exc):
        self.F.scaled_dot_product_attention = self.orig
        return False


def cpu_name():
    """The CPU's model name from /proc/cpuinfo, else platform's machine name."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def write_json(path, doc):
    if path:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, path)


def main(argv=None):
    t_start = time.perf_counter()
    args = parse_args(argv)
    try:
        import torch
        import transformers
        from transformers.cache_utils import DynamicCache
        from transformers import LlamaForCausalLM
    except ImportError as e:
        print("bench_torch_peer: skipped: needs torch and transformers >= 4.40 (%s)" % e, file=sys.stderr)
        return 77
    if args.device == "cuda" and not torch.cuda.is_available():
        print("bench_torch_peer: skipped: torch %s sees no CUDA device (use --device cpu only to verify "
              "the script)" % torch.__version__, file=sys.stderr)
        return 77
    cuda = args.device == "cuda"
    dname = args.dtype if args.dtype != "auto" else ("bf16" if cuda else "fp32")
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[dname]

    fwd = inspect.signature(LlamaForCausalLM.forward).parameters
    cache_kw = "cache" if "cache" in fwd else "past_key_values"  # renamed in transformers 5.2x
    logits_kw = next((k for k in ("logits_to_keep", "num_logits_to_keep") if k in fwd), None)
    try:
        DynamicCache(config=None)
        new_cache_takes_config = True
    except TypeError:
        new_cache_takes_config = False

    model = make_model(torch, transformers, args, dtype)
    cfg = model.config

    def new_cache():
        return DynamicCache(config=cfg) if new_cache_takes_config else DynamicCache()

    def forward(ids, cache, last_only):
        kw = {cache_kw: cache, "use_cache": True}
        if last_only and logits_kw:
            kw[logits_kw] = 1
        return model(input_ids=ids, **kw).logits[:, -1:]

    def sync():
        if cuda:
            torch.cuda.synchronize()

    dev_name = torch.cuda.get_device_name(0) if cuda else cpu_name()
    print("peer: torch %s transformers %s device %s dtype %s attn %s cache %s (kwarg %s)" % (
        torch.__version__, transformers.__version__, dev_name, dname, cfg._attn_implementation,
        DynamicCache.__name__, cache_kw), flush=True)

    bad, nparams = check_shape(torch, model, args.layers, dtype)
    exp = expected_params(args.layers)
    print("peer: shape layers %d n_embd %d heads %d/%d head_dim %d n_ff %d vocab %d rope_base %g rms_eps %g "
          "tied; params %d (SmolLM2-135M GGUF: %d%s)" % (
              args.layers, SHAPE["n_embd"], SHAPE["n_head"], SHAPE["n_head_kv"], SHAPE["head_dim"],
              SHAPE["n_ff"], SHAPE["n_vocab"], SHAPE["rope_base"], SHAPE["rms_eps"], nparams,
              GGUF_135M_PARAMS, ", equal" if nparams == GGUF_135M_PARAMS else
              (", DIFFERENT" if args.layers == SHAPE["n_layer"] else "; %d layers: expected %d" % (args.layers, exp))),
          flush=True)
    if args.gguf:
        try:
            gbad = check_gguf(args.gguf, args.layers)
        except ImportError as e:
            gbad = ["cannot read it: %s" % e]
        print("peer: gguf %s %s" % (args.gguf, "matches" if not gbad else "MISMATCH: " + "; ".join(gbad)), flush=True)
        bad += gbad
    if bad:
        print("bench_torch_peer: the model is not SmolLM2-135M's shape: " + "; ".join(bad), file=sys.stderr)
        return 1

    meta = {"torch": torch.__version__, "transformers": transformers.__version__, "device": dev_name,
            "device_kind": args.device, "dtype": dname, "layers": args.layers, "batch": args.batch,
            "decode_steps": args.decode, "reps": args.reps, "params": nparams,
            "params_gguf_135m": GGUF_135M_PARAMS, "cache_class": DynamicCache.__name__,
            "cache_kwarg": cache_kw, "sdpa": {}, "verification_only": not cuda}
    doc = {"meta": meta, "results": []}
    gen = torch.Generator(device=args.device).manual_seed(args.seed + 1)
    failed = 0

    with torch.inference_mode():
        # SDPA check on a short prompt: one call per layer in prefill and in decode.
        cache = new_cache()
        with SdpaProbe(torch) as p:
            nxt = forward(torch.randint(500, 48000, (1, 16), device=args.device, generator=gen), cache, True).argmax(-1)
        meta["sdpa"]["prefill"] = p.info
        with SdpaProbe(torch) as p:
            forward(nxt, cache, False)
        meta["sdpa"]["decode"] = p.info
        del cache
        sp, sd = meta["sdpa"]["prefill"], meta["sdpa"]["decode"]
        print("peer: sdpa prefill %d calls/forward (is_causal %s, attn_mask %s, k heads %s, enable_gqa %s); "
              "decode %d calls/step (attn_mask %s)" % (
                  sp["calls"], sp.get("is_causal"), sp.get("attn_mask"), (sp.get("k_shape") or [0, 0])[1],
                  sp.get("enable_gqa"), sd["calls"], sd.get("attn_mask")), flush=True)
        if sp["calls"] != args.layers or sd["calls"] != args.layers:
            print("bench_torch_peer: attention did not go through torch SDPA once per layer "
                  "(prefill %d, decode %d calls, %d layers)" % (sp["calls"], sd["calls"], args.layers), file=sys.stderr)
            return 1

        for T in args.lengths:
            r = {"length": T, "batch": args.batch}
            try:
                ids = torch.randint(500, 48000, (1, T), device=args.device, generator=gen)
                forward(ids, new_cache(), True)  # warm-up at this length
                sync()
                if cuda:
                    torch.cuda.empty_cache()
                    torch.cuda.reset_peak_memory_stats()
                best_p = float("inf")
                for _ in range(args.reps):
                    cache = None  # free the previous rep's cache before timing
                    cache = new_cache()
                    sync()
                    t0 = time.perf_counter()
                    last = forward(ids, cache, True)
                    sync()
                    best_p = min(best_p, time.perf_counter() - t0)
                r.update(prefill_tok_s=T / best_p, prefill_s=best_p,
                         prefill_peak_bytes=torch.cuda.max_memory_allocated() if cuda else None)
                best_d = float("inf")
                if args.decode > 0:
                    if cache.get_seq_length() != T:
                        raise RuntimeError("cache holds %d tokens after a prefill of %d" % (cache.get_seq_length(), T))
                    if args.batch > 1:
                        cache.batch_repeat_interleave(args.batch)
                    nxt0 = last.argmax(-1).expand(args.batch, 1).contiguous()
                    nxt = nxt0
                    for _ in range(2):  # warm-up steps at this batch and context
                        nxt = forward(nxt, cache, False).argmax(-1)
                    cache.crop(-2)
                    sync()
                    if cuda:
                        torch.cuda.reset_peak_memory_stats()
                    for _ in range(args.reps):
                        nxt = nxt0
                        sync()
                        t0 = time.perf_counter()
                        for _ in range(args.decode):
                            nxt = forward(nxt, cache, False).argmax(-1)
                        sync()
                        best_d = min(best_d, time.perf_counter() - t0)
                        cache.crop(-args.decode)
                    if cache.get_seq_length() != T or nxt.shape != (args.batch, 1):
                        raise RuntimeError("decode left the cache at %d tokens (expected %d), tokens %s" % (
                            cache.get_seq_length(), T, list(nxt.shape)))
                r.update(decode_tok_s=args.batch * args.decode / best_d if args.decode else 0.0,
                         decode_s=best_d if args.decode else 0.0, decode_steps=args.decode,
                         decode_peak_bytes=torch.cuda.max_memory_allocated() if (cuda and args.decode) else None)
                del cache, last
                gib = lambda b: "%.2f" % (b / 2**30) if b is not None else "-"
                print("torch sdpa %s  T=%6d  prefill %10.1f tok/s (%.3f s)  decode(b%d) %9.1f tok/s  "
                      "peak prefill %s GiB decode %s GiB" % (
                          dname, T, r["prefill_tok_s"], best_p, args.batch, r["decode_tok_s"],
                          gib(r["prefill_peak_bytes"]), gib(r["decode_peak_bytes"])), flush=True)
            except Exception as e:  # out of memory at one length, or an API change: record, go on
                failed += 1
                r = {"length": T, "batch": args.batch, "error": "%s: %s" % (type(e).__name__, str(e)[:500])}
                print("torch sdpa %s  T=%6d  FAILED: %s" % (dname, T, r["error"]), flush=True)
                cache = last = None
                if cuda:
                    torch.cuda.empty_cache()
            doc["results"].append(r)
            write_json(args.json, doc)
    meta["wall_s"] = time.perf_counter() - t_start
    write_json(args.json, doc)
    print("peer: %d of %d lengths measured in %.1f s" % (
        len(args.lengths) - failed, len(args.lengths), meta["wall_s"]), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
