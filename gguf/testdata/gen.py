#!/usr/bin/env python3
"""Writes the gguf package's independent reference files with llama.cpp's gguf-py.

  gguf-py.gguf   a small GGUF written by gguf-py's GGUFWriter: metadata of every value type (arrays of
                 strings and nested arrays included), alignment 64, and tensors of F32, F16, BF16, Q8_0,
                 Q4_0, Q4_K, Q5_K and Q6_K (Q8_0 and Q4_0 quantised by gguf-py; the K-quant blocks are
                 random bytes with chosen float16 scales, edge cases among them).
  golden.json    per tensor its numpy shape, type and the float32 bits gguf-py's dequantiser
                 (gguf.quants.dequantize) gives for it; the metadata as gguf-py's GGUFReader reads it back.

Run once, by hand; the Go tests compare against the files, so CI needs neither numpy nor gguf-py:
  PYTHONPATH=$LLAMACPP/gguf-py /usr/bin/python3 gguf/testdata/gen.py   # LLAMACPP: llama.cpp's folder, as in the Makefile
(Debian: apt-get install python3-numpy.)
"""
import json
import os
from pathlib import Path

import numpy as np
import gguf
from gguf import quants

HERE = Path(__file__).resolve().parent
T = gguf.GGMLQuantizationType


def f16_bytes(values):
    return np.array(values, dtype=np.float16).view(np.uint8)


def kquant_blocks(rng, qtype, n):
    """n blocks of random bytes with sane float16 scales where the block keeps them."""
    size = gguf.GGML_QUANT_SIZES[qtype][1]
    b = rng.integers(0, 256, size=(n, size), dtype=np.uint8)
    scales = [0.0123, -0.0007, 3.0e-6, 65504.0][:n]  # normal, negative, subnormal, largest
    mins = [0.0031, 0.25, -1.5e-5, 0.0][:n]
    for i in range(n):
        if qtype in (T.Q4_K, T.Q5_K):
            b[i, 0:2] = f16_bytes([scales[i]])
            b[i, 2:4] = f16_bytes([mins[i]])
        else:  # Q6_K: d is the last two bytes
            b[i, size - 2:] = f16_bytes([scales[i]])
    if n > 1 and qtype in (T.Q4_K, T.Q5_K):
        b[1, 4:16] = 0xFF  # every 6-bit scale and min at 63
    return b


def main():
    rng = np.random.default_rng(47)
    path = HERE / "gguf-py.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_custom_alignment(64)
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 60000)
    w.add_int16("test.i16", -30000)
    w.add_uint32("test.u32", 4000000000)
    w.add_int32("test.i32", -2000000000)
    w.add_float32("test.f32", 0.1)
    w.add_uint64("test.u64", 2**63 + 5)
    w.add_int64("test.i64", -(2**62))
    w.add_float64("test.f64", 2.5e-300)
    w.add_bool("test.true", True)
    w.add_bool("test.false", False)
    w.add_string("test.string", "héllo, GGUF ✓")
    w.add_string("test.empty", "")
    w.add_array("test.strings", ["a", "", "Ġthe", "<|eot_id|>"])
    w.add_array("test.ints", [1, -2, 3])
    w.add_array("test.floats", [0.5, -1.25])
    w.add_array("test.bools", [True, False, True])
    w.add_array("test.nested", [[1, 2], [3]])
    w.add_array("test.nested_strings", [["x", "y"], ["z"]])

    golden = {"tensors": []}

    def tensor(name, qtype, data, shape):
        if qtype in (T.F32, T.F16):
            w.add_tensor(name, data)
            values = data.astype(np.float32)
        elif qtype == T.BF16:
            w.add_tensor(name, data, raw_shape=shape, raw_dtype=T.BF16)
            values = quants.dequantize(data.view(np.uint8), T.BF16)
        else:
            w.add_tensor(name, data, raw_dtype=qtype)
            values = quants.dequantize(data, qtype)
        values = np.ascontiguousarray(values, dtype=np.float32).reshape(shape)
        golden["tensors"].append({"name": name, "type": int(qtype), "shape": list(shape),
                                  "f32_bits": [int(x) for x in values.reshape(-1).view(np.uint32)]})

    x = rng.standard_normal((3, 5)).astype(np.float32)
    tensor("f32", T.F32, x, (3, 5))
    specials = [np.inf, -np.inf, np.nan, 5.96e-8, 6.1e-5, -0.0, 65504.0, 1.0 / 3]
    h = np.concatenate([np.array(specials), rng.standard_normal(8)]).astype(np.float16).reshape(2, 8)
    tensor("f16", T.F16, h, (2, 8))
    bf = (rng.standard_normal((2, 4)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    tensor("bf16", T.BF16, bf, (2, 4))
    for qtype in (T.Q8_0, T.Q4_0):
        x = (rng.standard_normal((2, 128)) * 0.05).astype(np.float32)
        x[0, :32] = 0  # an all-zero block: d = 0
        tensor(qtype.name.lower(), qtype, quants.quantize(x, qtype), (2, 128))
    for qtype in (T.Q4_K, T.Q5_K, T.Q6_K):
        b = kquant_blocks(rng, qtype, 4).reshape(2, -1)
        tensor(qtype.name.lower(), qtype, b, (2, 512))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    # The metadata as gguf-py's own reader reads it back, for the Go reader to match.
    r = gguf.GGUFReader(str(path))
    meta = {}
    for f in r.fields.values():
        if f.name.startswith("test."):
            meta[f.name] = {"types": [int(t) for t in f.types], "value": str(f.contents())}
    golden["metadata"] = meta
    golden["data_offset"] = int(r.data_offset)
    golden["alignment"] = int(r.alignment)
    (HERE / "golden.json").write_text(json.dumps(golden, indent=None, ensure_ascii=False) + "\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes) and golden.json")


if __name__ == "__main__":
    main()
