#!/usr/bin/env python3
"""The upstream reference next to deltaserve on the same weights: transformers' native `kimi_linear`
model (KimiLinearForCausalLM, the implementation the golden fixtures were made with) running with
fla's Triton KDA kernels (chunk_kda for prefill, fused_recurrent_kda for decode) on one GPU.

Steps (each writes JSON under --out; run_hf_reference.sh runs them in one device call):
  probe      what is installed (package metadata, no imports): torch, triton, transformers (+ kimi_linear), fla
  make       a Kimi-Linear-48B-A3B-shaped checkpoint folder with fewer layers (the 3:1 KDA/MLA pattern and
             the dense first layer kept), random bf16 weights made on the GPU, original tensor names,
             one safetensors shard per layer + model.safetensors.index.json; and the prompt (--work)
  hf         loads that folder with from_pretrained (bf16, sdpa attention) and reports: which KDA
             functions transformers bound (fla or its torch fallback), the logits of one prompt, prefill
             seconds per length (one sequence, last-token logits) and decode ms/step per batch size at a
             given context (greedy, with the cache)
  compare    deltaserve's logits (`deltaserve logits --device cuda`, a safetensors file) against hf's
  kda        without transformers: fla's chunk_kda / fused_recurrent_kda alone at the model's KDA shapes

Weights follow the golden fixtures' recipe: embeddings N(0,1); linear weights N(0,1)/sqrt(fan_in);
norm weights 1+0.1*N(0,1); short-conv taps 0.5*N(0,1); A_log = log U(1,16); dt_bias = softplus^-1(dt)
with dt log-uniform in [1e-3, 1e-1]; e_score_correction_bias 0.1*N(0,1) (f32 for the last three).
"""
import argparse
import json
import math
import os
import struct
import sys
import time
import traceback


def now():
    return time.perf_counter()


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
    print(f"wrote {path}", flush=True)


def import_fla(fla_path):
    """Imports fla (from --fla if given). Returns (info dict, ok). When the package's top level fails for
    another reason than a missing module (its model registrations need matching transformers versions),
    fla.ops is reached through a bare package object, which is all transformers' kernel lookup needs."""
    info = {"path": fla_path}
    if fla_path:
        sys.path.insert(0, fla_path)
    try:
        import fla  # noqa: F401

        info["version"] = getattr(fla, "__version__", "?")
        info["file"] = fla.__file__
    except Exception as e:  # noqa: BLE001
        info["top_level_error"] = f"{type(e).__name__}: {e}"
        if fla_path and os.path.isdir(os.path.join(fla_path, "fla")):
            import types

            stub = types.ModuleType("fla")
            stub.__path__ = [os.path.join(fla_path, "fla")]
            sys.modules["fla"] = stub
            info["via_stub_package"] = True
    try:
        from fla.ops.kda import chunk_kda, fused_recurrent_kda  # noqa: F401

        info["ops_kda"] = True
        return info, True
    except Exception as e:  # noqa: BLE001
        info["ops_kda"] = False
        info["ops_kda_error"] = f"{type(e).__name__}: {e}"
        return info, False


def probe(args):
    """Versions from the installed packages' metadata, without importing them (seconds, not tens of seconds):
    the hf step reports what actually imports and which KDA functions transformers bound."""
    import importlib.metadata as md
    import importlib.util as iu

    r = {}
    for name in ("torch", "triton", "transformers", "safetensors", "einops", "accelerate", "causal-conv1d",
                 "kernels", "flash-linear-attention"):
        try:
            r[name] = md.version(name)
        except md.PackageNotFoundError:
            r[name] = None
    if r["transformers"]:
        try:
            r["kimi_linear"] = iu.find_spec("transformers.models.kimi_linear") is not None
        except Exception as e:  # noqa: BLE001
            r["kimi_linear"] = False
            r["kimi_linear_error"] = f"{type(e).__name__}: {e}"
    fla_dir = os.path.join(args.fla, "fla") if args.fla else ""
    r["fla_src"] = fla_dir if fla_dir and os.path.isfile(os.path.join(fla_dir, "ops", "kda", "chunk.py")) else None
    r["fla_ok"] = bool(r["fla_src"] or r["flash-linear-attention"])
    print(json.dumps(r), flush=True)
    write_json(os.path.join(args.out, "probe.json"), r)


# ---------------------------------------------------------------------------------------------- make


def reduced_config(base_path, layers):
    """The bundled 48B config with `layers` decoder layers: 1-based layer i is MLA when i % 4 == 0 (the
    checkpoint's 3:1 pattern), KDA otherwise; layer 1 keeps the dense MLP (first_k_dense_replace)."""
    with open(base_path) as f:
        cfg = json.load(f)
    cfg["num_hidden_layers"] = layers
    lin = cfg["linear_attn_config"]
    lin["kda_layers"] = [i for i in range(1, layers + 1) if i % 4 != 0]
    lin["full_attn_layers"] = [i for i in range(1, layers + 1) if i % 4 == 0]
    return cfg


def layer_tensors(cfg, i):
    """(name, shape, kind) of decoder layer i (0-based) in the checkpoint's original names."""
    d = cfg["hidden_size"]
    p = f"model.layers.{i}."
    out = [(p + "input_layernorm.weight", [d], "norm"), (p + "post_attention_layernorm.weight", [d], "norm")]
    lin = cfg["linear_attn_config"]
    if (i + 1) in lin["kda_layers"]:
        H, K = lin["num_heads"], lin["head_dim"]
        P = H * K
        a = p + "self_attn."
        out += [(a + n + "_proj.weight", [P, d], "linear") for n in ("q", "k", "v")]
        out += [(a + n + "_conv1d.weight", [P, 1, lin["short_conv_kernel_size"]], "conv") for n in ("q", "k", "v")]
        out += [(a + "f_a_proj.weight", [K, d], "linear"), (a + "f_b_proj.weight", [P, K], "linear"),
                (a + "g_a_proj.weight", [K, d], "linear"), (a + "g_b_proj.weight", [P, K], "linear"),
                (a + "b_proj.weight", [H, d], "linear"), (a + "A_log", [1, 1, H, 1], "a_log"),
                (a + "dt_bias", [P], "dt_bias"), (a + "o_norm.weight", [K], "norm"),
                (a + "o_proj.weight", [d, P], "linear")]
    else:
        H = cfg["num_attention_heads"]
        qk = cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"]
        r = cfg["kv_lora_rank"]
        a = p + "self_attn."
        out += [(a + "q_proj.weight", [H * qk, d], "linear"),
                (a + "kv_a_proj_with_mqa.weight", [r + cfg["qk_rope_head_dim"], d], "linear"),
                (a + "kv_a_layernorm.weight", [r], "norm"),
                (a + "kv_b_proj.weight", [H * (cfg["qk_nope_head_dim"] + cfg["v_head_dim"]), r], "linear"),
                (a + "o_proj.weight", [d, H * cfg["v_head_dim"]], "linear")]
    if i < cfg["first_k_dense_replace"]:
        f = cfg["intermediate_size"]
        out += [(p + "mlp.gate_proj.weight", [f, d], "linear"), (p + "mlp.up_proj.weight", [f, d], "linear"),
                (p + "mlp.down_proj.weight", [d, f], "linear")]
    else:
        f, E = cfg["moe_intermediate_size"], cfg["num_experts"]
        m = p + "block_sparse_moe."
        out += [(m + "gate.weight", [E, d], "linear"), (m + "gate.e_score_correction_bias", [E], "bias")]
        fs = f * cfg["num_shared_experts"]
        out += [(m + "shared_experts.gate_proj.weight", [fs, d], "linear"),
                (m + "shared_experts.up_proj.weight", [fs, d], "linear"),
                (m + "shared_experts.down_proj.weight", [d, fs], "linear")]
        for e in range(E):
            out += [(m + f"experts.{e}.w1.weight", [f, d], "linear"), (m + f"experts.{e}.w2.weight", [d, f], "linear"),
                    (m + f"experts.{e}.w3.weight", [f, d], "linear")]
    return out


def make_tensor(shape, kind, gen):
    import torch

    dev = "cuda"
    if kind == "linear":
        return (torch.randn(shape, generator=gen, device=dev) / math.sqrt(shape[-1])).to(torch.bfloat16)
    if kind == "embed":
        return torch.randn(shape, generator=gen, device=dev).to(torch.bfloat16)
    if kind == "norm":
        return (1 + 0.1 * torch.randn(shape, generator=gen, device=dev)).to(torch.bfloat16)
    if kind == "conv":
        return (0.5 * torch.randn(shape, generator=gen, device=dev)).to(torch.bfloat16)
    if kind == "a_log":
        return torch.log(torch.empty(shape, device=dev).uniform_(1, 16, generator=gen))
    if kind == "dt_bias":
        u = torch.rand(shape, generator=gen, device=dev)
        dt = torch.exp(math.log(1e-3) + u * (math.log(1e-1) - math.log(1e-3)))
        return dt + torch.log(-torch.expm1(-dt))  # softplus^-1(dt)
    if kind == "bias":
        return 0.1 * torch.randn(shape, generator=gen, device=dev)
    raise ValueError(kind)


def make(args):
    import torch
    from safetensors.torch import save_file

    cfg = reduced_config(args.config, args.layers)
    os.makedirs(args.model, exist_ok=True)
    with open(os.path.join(args.model, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(args.seed)
    V, d = cfg["vocab_size"], cfg["hidden_size"]
    shards = [("model-embed.safetensors", [("model.embed_tokens.weight", [V, d], "embed"),
                                            ("model.norm.weight", [d], "norm"), ("lm_head.weight", [V, d], "linear")])]
    shards += [(f"model-layer{i:02d}.safetensors", layer_tensors(cfg, i)) for i in range(args.layers)]
    weight_map, total, t0 = {}, 0, now()
    for file, tensors in shards:
        out = {}
        for name, shape, kind in tensors:
            out[name] = make_tensor(shape, kind, gen).cpu()
            weight_map[name] = file
            total += out[name].numel() * out[name].element_size()
        save_file(out, os.path.join(args.model, file), metadata={"format": "pt"})
    with open(os.path.join(args.model, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f)
    # The prompt of the logits comparison, one id a line (deltaserve logits --tokens-file).
    with open(os.path.join(args.work, "prompt.txt"), "w") as f:
        f.write("\n".join(str(int(t)) for t in prompt_ids(V, args.prompt_len, args.prompt_seed)) + "\n")
    r = {"folder": args.model, "layers": args.layers, "bytes": total, "tensors": len(weight_map),
         "kda_layers": cfg["linear_attn_config"]["kda_layers"],
         "full_attn_layers": cfg["linear_attn_config"]["full_attn_layers"], "seconds": now() - t0}
    print(json.dumps(r), flush=True)
    write_json(os.path.join(args.out, "make.json"), r)


# ------------------------------------------------------------------------------------------------ hf


def prompt_ids(vocab, n, seed):
    import torch

    g = torch.Generator()
    g.manual_seed(seed)
    return torch.randint(0, vocab, (n,), generator=g)


def fn_origin(fn):
    f = getattr(fn, "__wrapped__", fn)
    return f"{getattr(f, '__module__', '?')}.{getattr(f, '__name__', repr(f))}"


def hf(args):
    import torch

    r = {"steps": []}
    path = os.path.join(args.out, "hf.json")

    def save():
        write_json(path, r)

    r["fla"], fla_ok = import_fla(args.fla) if args.fla else ({"skipped": True}, False)
    try:
        import transformers
        from transformers import AutoModelForCausalLM
    except Exception as e:  # noqa: BLE001
        r["error"] = f"transformers not importable: {type(e).__name__}: {e}"
        save()
        return 3
    r["transformers"] = transformers.__version__
    t0 = now()
    try:
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.bfloat16, device_map="cuda",
                                                     attn_implementation=args.attn)
    except Exception as e:  # noqa: BLE001
        r["error"] = f"from_pretrained failed: {type(e).__name__}: {e}"
        r["traceback"] = traceback.format_exc()[-3000:]
        save()
        return 4
    model.eval()
    torch.cuda.synchronize()
    r["load_s"] = now() - t0
    r["class"] = type(model).__name__
    r["experts_implementation"] = getattr(model.config, "_experts_implementation", None)
    r["attn_implementation"] = getattr(model.config, "_attn_implementation", None)
    # The functions each KDA layer calls: transformers keeps them in the module's `_hidden_kernels`
    # (fla's chunk_kda / fused_recurrent_kda when fla imported first, else its torch fallbacks).
    kda = next((m for m in model.modules() if "_hidden_kernels" in m.__dict__), None)
    if kda is not None:
        r["kda_functions"] = {k: fn_origin(v) for k, v in kda.__dict__["_hidden_kernels"].items()}
    r["gpu_mem_gb"] = torch.cuda.memory_allocated() / 1e9
    print(json.dumps({k: v for k, v in r.items() if k != "steps"}), flush=True)
    save()
    cfg = model.config
    V = cfg.vocab_size

    # Logits of the prompt: bf16 model output, and the lm_head applied in f32 to the final hidden state.
    ids = prompt_ids(V, args.prompt_len, args.prompt_seed)  # the ids of make's prompt.txt
    print(f"first forward ({args.prompt_len} tokens; Triton compiles and autotunes fla's kernels now)", flush=True)
    t0 = now()
    with torch.no_grad():
        x = ids[None].cuda()
        h = model.model(input_ids=x, use_cache=False).last_hidden_state[0]
        torch.cuda.synchronize()
        r["first_forward_s"] = now() - t0
        logits_f32 = torch.nn.functional.linear(h.float(), model.lm_head.weight.float())
        logits_bf16 = model.lm_head(h).float()
    torch.save({"ids": ids, "logits_f32": logits_f32.cpu(), "logits_bf16": logits_bf16.cpu()},
               os.path.join(args.work, "hf_logits.pt"))
    r["prompt_len"] = args.prompt_len
    r["last_logit_absmax"] = logits_f32[-1].abs().max().item()
    save()

    def timed(fn, reps):
        best = float("inf")
        for _ in range(reps):
            torch.cuda.synchronize()
            t = now()
            fn()
            torch.cuda.synchronize()
            best = min(best, now() - t)
        return best

    deadline = now() + args.budget_s
    with torch.no_grad():
        for L in args.prefill:
            if now() > deadline:
                r["steps"].append({"prefill": L, "skipped": "time budget"})
                continue
            x = prompt_ids(V, L, 7 + L)[None].cuda()
            try:
                run = lambda: model(input_ids=x, use_cache=True, logits_to_keep=1)  # noqa: E731
                first = timed(run, 1)  # Triton compiles / autotunes on the first call of a shape
                best = timed(run, args.reps)
                r["steps"].append({"prefill": L, "s": best, "first_call_s": first, "tok_s": L / best})
            except Exception as e:  # noqa: BLE001
                r["steps"].append({"prefill": L, "error": f"{type(e).__name__}: {str(e)[:300]}"})
            torch.cuda.empty_cache()
            print(r["steps"][-1], flush=True)
            save()
        for B in args.batch:
            if now() > deadline:
                r["steps"].append({"decode_batch": B, "skipped": "time budget"})
                continue
            try:
                x = torch.stack([prompt_ids(V, args.context, 100 + b) for b in range(B)]).cuda()
                out = model(input_ids=x, use_cache=True, logits_to_keep=1)
                cache = out.past_key_values
                tok = out.logits[:, -1].argmax(-1, keepdim=True)
                for s in range(args.warm + args.decode_steps):
                    if s == args.warm:
                        torch.cuda.synchronize()
                        t = now()
                    out = model(input_ids=tok, past_key_values=cache, use_cache=True)
                    tok = out.logits[:, -1].argmax(-1, keepdim=True)
                torch.cuda.synchronize()
                ms = (now() - t) / args.decode_steps * 1e3
                r["steps"].append({"decode_batch": B, "context": args.context, "ms_step": ms, "tok_s": B / ms * 1e3,
                                   "steps": args.decode_steps})
                del out, cache
            except Exception as e:  # noqa: BLE001
                r["steps"].append({"decode_batch": B, "error": f"{type(e).__name__}: {str(e)[:300]}"})
            torch.cuda.empty_cache()
            print(r["steps"][-1], flush=True)
            save()
    return 0


# ------------------------------------------------------------------------------------------- compare


def read_safetensors_f32(path, name):
    """One F32 tensor of a safetensors file, as a torch tensor (no safetensors dependency)."""
    import torch

    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        meta = header[name]
        assert meta["dtype"] == "F32", meta
        b, e = meta["data_offsets"]
        f.seek(8 + n + b)
        data = bytearray(f.read(e - b))
    return torch.frombuffer(data, dtype=torch.float32).reshape(meta["shape"])


def compare(args):
    import torch

    r = {}
    ref_path = os.path.join(args.work, "hf_logits.pt")
    if not os.path.exists(ref_path):
        r["error"] = f"no reference logits ({ref_path}): the hf step did not get that far"
        write_json(os.path.join(args.out, "compare.json"), r)
        return 6
    ref = torch.load(ref_path)
    for label, path in (("ours_bf16", args.ours), ("ours_f32", args.ours_f32)):
        if not path or not os.path.exists(path):
            continue
        ours = read_safetensors_f32(path, "logits")
        row = {}
        for hname in ("logits_f32", "logits_bf16"):
            h = ref[hname]
            diff = (ours - h).abs()
            row[f"vs_hf_{hname}"] = {
                "last_max_abs": diff[-1].max().item(),
                "last_top1_equal": bool(ours[-1].argmax() == h[-1].argmax()),
                "all_max_abs": diff.max().item(),
                "all_mean_abs": diff.mean().item(),
                "top1_agreement": (ours.argmax(-1) == h.argmax(-1)).float().mean().item(),
                "positions": int(h.shape[0]),
            }
        row["last_logit_absmax"] = ours[-1].abs().max().item()
        top2 = ref["logits_f32"][-1].topk(2).values
        row["hf_last_top2_gap"] = (top2[0] - top2[1]).item()
        r[label] = row
    print(json.dumps(r, indent=1), flush=True)
    write_json(os.path.join(args.out, "compare.json"), r)


# ----------------------------------------------------------------------------------------------- kda


def kda(args):
    """fla's KDA kernels alone at the model's KDA shapes (the fallback without transformers)."""
    import torch

    info, ok = import_fla(args.fla)
    r = {"fla": info, "steps": []}
    if not ok:
        write_json(os.path.join(args.out, "kda.json"), r)
        return 5
    from fla.ops.kda import chunk_kda, fused_recurrent_kda

    with open(args.config) as f:
        lin = json.load(f)["linear_attn_config"]
    H, D = lin["num_heads"], lin["head_dim"]
    g = torch.Generator(device="cuda")
    g.manual_seed(1)

    def inputs(B, T):
        q, k, v = (torch.randn(B, T, H, D, device="cuda", generator=g, dtype=torch.bfloat16) for _ in range(3))
        gate = -torch.rand(B, T, H, D, device="cuda", generator=g).mul(0.1)
        beta = torch.rand(B, T, H, device="cuda", generator=g)
        return q, k, v, gate, beta

    def ms(fn):
        from triton.testing import do_bench

        return do_bench(fn, warmup=25, rep=100)  # median ms of CUDA-event timings

    for T in args.prefill:
        q, k, v, gate, beta = inputs(1, T)
        t = ms(lambda: chunk_kda(q, k, v, gate, beta, use_qk_l2norm_in_kernel=True, output_final_state=True))
        r["steps"].append({"chunk_kda_T": T, "H": H, "ms_per_layer": t})
        print(r["steps"][-1], flush=True)
    for B in args.batch:
        q, k, v, gate, beta = inputs(B, 1)
        s0 = torch.zeros(B, H, D, D, device="cuda")
        t = ms(lambda: fused_recurrent_kda(q, k, v, gate, beta, initial_state=s0, output_final_state=True,
                                           use_qk_l2norm_in_kernel=True))
        r["steps"].append({"fused_recurrent_kda_B": B, "H": H, "ms_per_layer": t})
        print(r["steps"][-1], flush=True)
    write_json(os.path.join(args.out, "kda.json"), r)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=["probe", "make", "hf", "compare", "kda"])
    ap.add_argument("--out", default=os.environ.get("OUT", "out"), help="folder of the JSON results")
    ap.add_argument("--work", default="/tmp/hf_ref", help="folder of the prompt and the reference logits")
    ap.add_argument("--fla", default="", help="folder holding the fla package (fla/__init__.py)")
    ap.add_argument("--config", default="data/profiles/models/kimi-linear-48b/config.json")
    ap.add_argument("--model", default="/tmp/hf_ref/model", help="checkpoint folder (written by make)")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--attn", default="sdpa", help="transformers attn_implementation of the MLA layers")
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--prompt-seed", type=int, default=20261202)
    ap.add_argument("--prefill", default="8192,32768")
    ap.add_argument("--batch", default="1,8")
    ap.add_argument("--context", type=int, default=4096)
    ap.add_argument("--decode-steps", type=int, default=16)
    ap.add_argument("--warm", type=int, default=2)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--budget-s", type=float, default=120, help="hf: no new point starts after this many seconds")
    ap.add_argument("--ours", default="", help="compare: deltaserve logits file (bf16 model)")
    ap.add_argument("--ours-f32", default="", help="compare: deltaserve logits file (f32 model)")
    args = ap.parse_args()
    args.prefill = [int(x) for x in args.prefill.split(",") if x]
    args.batch = [int(x) for x in args.batch.split(",") if x]
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    fns = {"probe": probe, "make": make, "hf": hf, "compare": compare, "kda": kda}
    sys.exit(fns[args.step](args) or 0)


if __name__ == "__main__":
    main()
