#!/usr/bin/python3
"""ember's K-quant and IQ4 decoding against llama.cpp's own Python reference.

  /usr/bin/python3 reference/test_kquants_gguf_py.py GGUF_PY_DIR TEST_KQUANTS_BIN

GGUF_PY_DIR is llama.cpp's gguf-py folder (scripts/llama_cpp_source.sh
unpacks it from the npm package node-llama-cpp); TEST_KQUANTS_BIN is
build/tests/test_kquants. For each of Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL,
IQ4_XS, Q4_1, Q5_0 and Q5_1, blocks of random bytes (every bit pattern is a
valid block; the f16 scale fields are drawn as finite halves of all
magnitudes, subnormals and zero included) are written to one GGUF file by gguf-py's GGUFWriter; ember
reads that file with its own GGUF parser and converts each tensor with its
format table (test_kquants --dequant), and the result must equal
gguf.quants.dequantize bit for bit. Then the formats whose quantizer is
llama.cpp's reference one (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) must quantize as
gguf.quants.quantize does, byte for byte (test_kquants --quant). Prints
PASS/FAIL lines.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np


def main():
    gguf_py, binary = sys.argv[1], sys.argv[2]
    sys.path.insert(0, gguf_py)
    import gguf
    from gguf import quants

    T = gguf.GGMLQuantizationType
    # (type, byte offsets of the f16 scale fields inside a block)
    kinds = [(T.Q2_K, [80, 82]), (T.Q3_K, [108]), (T.Q4_K, [0, 2]), (T.Q5_K, [0, 2]), (T.Q6_K, [208]),
             (T.IQ4_NL, [0]), (T.IQ4_XS, [0]), (T.Q4_1, [0, 2]), (T.Q5_0, [0]), (T.Q5_1, [0, 2])]
    rng = np.random.default_rng(17)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.gguf")
        w = gguf.GGUFWriter(path, "ember-kquant-test")
        want = {}
        for qt, scale_offsets in kinds:
            block, size = gguf.GGML_QUANT_SIZES[qt]
            n_blocks = 4096
            raw = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
            for off in scale_offsets:
                # finite halves: sign, any exponent but 31, any mantissa
                h = rng.integers(0, 0x7c00, size=n_blocks, dtype=np.uint16)
                h |= (rng.integers(0, 2, size=n_blocks, dtype=np.uint16) << 15)
                raw[:, off:off + 2] = h.view(np.uint8).reshape(n_blocks, 2)
            rows = n_blocks // 4
            name = qt.name.lower()
            w.add_tensor(name, raw.reshape(rows, 4 * size), raw_dtype=qt)   # byte shape: gguf-py derives (rows, cols)
            want[name] = quants.dequantize(raw.reshape(rows, 4 * size), qt).astype(np.float32).reshape(-1)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        out = os.path.join(tmp, "out")
        os.mkdir(out)
        r = subprocess.run([binary, "--dequant", path, out], capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL kquants_read_gguf_py_file\n     " + r.stderr.strip())
            return 1
        print("PASS kquants_read_gguf_py_file")
        for name, ref in want.items():
            got = np.fromfile(os.path.join(out, name + ".f32"), dtype=np.float32)
            same = got.shape == ref.shape and np.array_equal(got.view(np.uint32), ref.view(np.uint32))
            if same:
                print(f"PASS kquants_bit_exact_{name} ({ref.size} values)")
            else:
                failed += 1
                bad = np.flatnonzero(got.view(np.uint32) != ref.view(np.uint32)) if got.shape == ref.shape else [0]
                i = int(bad[0])
                print(f"FAIL kquants_bit_exact_{name}\n     {len(bad)} values differ; first at {i}: "
                      f"ember {got[i] if got.size > i else None!r} gguf-py {ref[i]!r}")
        failed += quantize_matches(quants, T, binary, tmp, rng)
    return 1 if failed else 0


def quantize_matches(quants, T, binary, tmp, rng):
    """The formats whose quantizer is llama.cpp's reference one (Q8_0, Q4_0,
    Q4_1, Q5_0, Q5_1) quantize as gguf-py does, byte for byte: Gaussian
    blocks of many magnitudes, plus blocks that are all zero, constant, one
    spike, of equal magnitudes with both signs (the tie of the largest), and
    tiny or huge (f16 subnormal and overflowing scales)."""
    n_blocks = 4096
    x = rng.standard_normal((n_blocks, 32)).astype(np.float32)
    x *= np.float32(10.0) ** rng.integers(-6, 4, size=(n_blocks, 1)).astype(np.float32)
    x[0] = 0
    x[1] = 0.25
    x[2] = 0
    x[2, 7] = -3
    x[3] = np.where(np.arange(32) % 2 == 0, 1.5, -1.5)
    x[4] *= np.float32(1e-7)
    x[5] *= np.float32(1e5)
    x[6] = -np.abs(x[6])
    data = x.reshape(-1)
    src = os.path.join(tmp, "x.f32")
    data.tofile(src)
    failed = 0
    for qt in (T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1):
        name = qt.name.lower()
        dst = os.path.join(tmp, name + ".q")
        r = subprocess.run([binary, "--quant", name, src, dst], capture_output=True, text=True)
        with np.errstate(over="ignore"):  # the huge block's scales overflow f16 on purpose
            want = quants.quantize(data.reshape(n_blocks, 32), qt).reshape(-1)
        got = np.fromfile(dst, dtype=np.uint8) if r.returncode == 0 else np.zeros(0, np.uint8)
        if r.returncode == 0 and got.shape == want.shape and np.array_equal(got, want):
            print(f"PASS quantize_bit_exact_{name} ({n_blocks} blocks)")
            continue
        failed += 1
        size = want.size // n_blocks
        bad = sorted({int(i) // size for i in np.flatnonzero(got != want)}) if got.shape == want.shape else [0]
        print(f"FAIL quantize_bit_exact_{name}\n     {r.stderr.strip()} {len(bad)} blocks differ; first {bad[0]}: "
              f"ember {got[bad[0] * size:(bad[0] + 1) * size].tolist()} gguf-py "
              f"{want[bad[0] * size:(bad[0] + 1) * size].tolist()}")
    return failed


if __name__ == "__main__":
    sys.exit(main())
