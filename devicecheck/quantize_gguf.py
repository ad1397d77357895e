"""Writes a Q4_0 (or Q8_0) copy of an F32/F16/BF16 GGUF, every matrix in that
type, as `llama-quantize --pure IN OUT Q4_0` does: the trimmed llama.cpp
source the device check builds has no llama-quantize. Every metadata key is
kept (general.file_type says the new type); 1-D tensors (the norms) are
written as F32, as llama.cpp keeps them. Uses llama.cpp's gguf-py (its
GGUFReader, GGUFWriter and quants module) and numpy; tensors are quantized
in JOBS processes and written in the input's order.

usage: PYTHONPATH=gguf-py python3 quantize_gguf.py IN.gguf OUT.gguf [q4_0|q8_0] [JOBS]
"""
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import gguf

TYPES = {"q4_0": (gguf.GGMLQuantizationType.Q4_0, gguf.LlamaFileType.MOSTLY_Q4_0),
         "q8_0": (gguf.GGMLQuantizationType.Q8_0, gguf.LlamaFileType.MOSTLY_Q8_0)}
FLOATS = (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16, gguf.GGMLQuantizationType.BF16)

def _reader(path):
    """gguf.GGUFReader(path) over a plain ndarray view of its mapping: the
    reader slices np.memmap once per string, and the subclass's bookkeeping
    makes the 128256 tokens and their merges take 5× as long to parse."""
    memmap = np.memmap
    np.memmap = lambda *a, **k: np.asarray(memmap(*a, **k))
    try:
        return gguf.GGUFReader(path)
    finally:
        np.memmap = memmap


def _target(t, qtype):
    """The type tensor t is written in: F32 for 1-D tensors, qtype for
    matrices whose rows are whole blocks, else unchanged."""
    if t.tensor_type not in FLOATS:
        return t.tensor_type
    if len(t.shape) == 1:
        return gguf.GGMLQuantizationType.F32
    block, _ = gguf.GGML_QUANT_SIZES[qtype]
    return qtype if int(t.shape[0]) % block == 0 else t.tensor_type


def _convert(job):
    """Worker: one tensor (read from the file by offset: opening a GGUFReader
    per process parses the whole vocabulary again) as its target type."""
    path, offset, nbytes, shape, src, to = job
    raw = np.memmap(path, dtype=np.uint8, mode="r", offset=offset, shape=(nbytes,))
    if src == to:
        return np.array(raw)
    if src == gguf.GGMLQuantizationType.BF16:
        x = gguf.quants.dequantize(raw.reshape(*shape[:-1], -1), src)
    else:
        x = raw.view(np.float16 if src == gguf.GGMLQuantizationType.F16 else np.float32).astype(np.float32).reshape(shape)
    return x if to == gguf.GGMLQuantizationType.F32 else gguf.quants.quantize(x, to)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    name = sys.argv[3].lower() if len(sys.argv) > 3 else "q4_0"
    jobs = int(sys.argv[4]) if len(sys.argv) > 4 else max(1, (os.cpu_count() or 1) // 2)
    if name not in TYPES:
        sys.exit(f"quantize_gguf: type {name}: want one of {', '.join(TYPES)}")
    qtype, ftype = TYPES[name]
    t0 = time.time()
    r = _reader(src)
    arch = r.get_field(gguf.Keys.General.ARCHITECTURE).contents()
    w = gguf.GGUFWriter(dst + ".tmp", arch)
    for f in r.fields.values():
        if f.name == gguf.Keys.General.ARCHITECTURE or f.name.startswith("GGUF."):
            continue
        vtype = f.types[0]
        sub = f.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        val = int(ftype) if f.name == gguf.Keys.General.FILE_TYPE else f.contents()
        w.add_key_value(f.name, val, vtype, sub_type=sub)
    for t in r.tensors:
        to = _target(t, qtype)
        shape = tuple(reversed([int(d) for d in t.shape]))  # numpy order: rows, columns
        block, size = gguf.GGML_QUANT_SIZES[to]
        nbytes = t.n_elements * size // block
        if to in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
            w.add_tensor_info(t.name, shape, np.dtype(np.float32 if to == gguf.GGMLQuantizationType.F32 else np.float16), nbytes)
        else:
            w.add_tensor_info(t.name, gguf.quants.quant_shape_to_byte_shape(shape, to), np.dtype(np.uint8), nbytes, raw_dtype=to)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    work = [(src, t.data_offset, t.n_bytes, tuple(reversed([int(d) for d in t.shape])), t.tensor_type, _target(t, qtype))
            for t in r.tensors]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            for data in pool.map(_convert, work):
                w.write_tensor_data(data)
    else:
        for a in work:
            w.write_tensor_data(_convert(a))
    w.close()
    os.replace(dst + ".tmp", dst)
    kinds = {}
    for t in r.tensors:
        k = _target(t, qtype).name
        kinds[k] = kinds.get(k, 0) + 1
    print(f"quantize_gguf: wrote {dst} ({os.path.getsize(dst)} bytes; tensors {kinds}) in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
