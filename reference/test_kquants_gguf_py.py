#!/usr/bin/python3
"""ember's K-quant and IQ4 decoding against llama.cpp's own Python reference.

  /usr/bin/python3 reference/test_kquants_gguf_py.py GGUF_PY_DIR TEST_KQUANTS_BIN

GGUF_PY_DIR is llama.cpp's gguf-py folder (scripts/llama_cpp_source.sh
unpacks it from the npm package node-llama-cpp); TEST_KQUANTS_BIN is
build/tests/test_kquants. For each of Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and
IQ4_XS, blocks of random bytes (every bit pattern is a valid block; the f16
scale fields are drawn as finite halves of all magnitudes, subnormals and
zero included) are written to one GGUF file by gguf-py's GGUFWriter; ember
reads that file with its own GGUF parser and converts each tensor with its
format table (test_kquants --dequant), and the result must equal
gguf.quants.dequantize bit for bit. Prints PASS/FAIL lines.
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
             (T.IQ4_NL, [0]), (T.IQ4_XS, [0])]
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
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
