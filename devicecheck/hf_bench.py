"""The 1B-shape synthetic checkpoint under PyTorch/transformers, as the
method's public code runs models: greedy `generate` of N tokens after the
same 16 prompt ids sirun gets (decode tok/s from the difference of a run of
N and a run of 1 token, so the prompt does not count), a forward pass over
P prompt tokens (prefill tok/s), and peak GPU memory. Prints one JSON line;
any failure (no torch, no GPU) is a JSON line with "error", never a crash
of the device script.

usage: python3 hf_bench.py MODEL_DIR N P [cuda|cpu]
"""
import json
import statistics
import sys
import time


def main():
    model_dir, n_new, n_prefill = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    device = sys.argv[4] if len(sys.argv) > 4 else "cuda"
    try:
        import torch
        import transformers
    except Exception as e:  # noqa: BLE001 - report, do not fail the script
        print(json.dumps({"error": f"import torch/transformers: {e}"}))
        return
    if device == "cuda" and not torch.cuda.is_available():
        print(json.dumps({"error": "torch sees no GPU"}))
        return
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    t0 = time.time()
    try:  # transformers ≥ 4.56 (5.x on the H200 image) names it dtype
        model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16)
    except TypeError:
        model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.bfloat16)
    model = model.to(device).eval()
    load_s = time.time() - t0
    ids = torch.arange(100, 116, device=device).unsqueeze(0)
    mask = torch.ones_like(ids)

    def gen(n):
        sync()
        t = time.time()
        with torch.no_grad():
            out = model.generate(ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n,
                                 do_sample=False, pad_token_id=0)
        sync()
        return time.time() - t, out.shape[1] - ids.shape[1]

    gen(4)  # warm up: kernels, allocator
    t1, _ = gen(1)
    tn, made = gen(n_new)
    decode = (made - 1) / (tn - t1) if tn > t1 and made > 1 else None

    p = torch.arange(100, 100 + n_prefill, device=device).unsqueeze(0)
    times = []
    with torch.no_grad():
        for _ in range(3):
            sync()
            t = time.time()
            model(p)
            sync()
            times.append(time.time() - t)
    prefill = n_prefill / statistics.median(times)
    res = {
        "torch": torch.__version__, "transformers": transformers.__version__, "device": device,
        "dtype": "bf16", "load_s": round(load_s, 2),
        "decode_tok_s": round(decode, 2) if decode else None, "decode_tokens": made,
        "prefill_tokens": n_prefill, "prefill_tok_s": round(prefill, 1),
    }
    if device == "cuda":
        res["gpu"] = torch.cuda.get_device_name(0)
        res["max_memory_allocated"] = torch.cuda.max_memory_allocated()
    print(json.dumps(res))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
