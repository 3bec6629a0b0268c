#!/bin/sh
# Writes the seed corpora for the fuzz targets:
#   fuzz/corpus/safetensors/  small valid safetensors files
#   fuzz/corpus/index/        small valid model.safetensors.index.json files
# Usage: fuzz/make_seeds.sh   (from the repository root; needs python3)
set -eu
cd "$(dirname "$0")"
mkdir -p corpus/safetensors corpus/index
python3 - <<'PY'
import json, struct

def write_st(path, tensors, metadata=None):
    """tensors: list of (name, dtype, shape, raw bytes); laid out in order."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)

f32 = lambda *xs: struct.pack("<%df" % len(xs), *xs)
write_st("corpus/safetensors/single_f32.safetensors",
         [("model.norm.weight", "F32", [4], f32(1, 2, 3, 4))])
write_st("corpus/safetensors/mixed.safetensors",
         [("model.embed_tokens.weight", "F32", [2, 3], f32(*range(6))),
          ("model.layers.0.mlp.up_proj.weight", "F16", [2, 2], b"\x00\x3c" * 4),
          ("lm_head.weight", "BF16", [1, 2], b"\x80\x3f\x00\x40"),
          ("scale", "F32", [], f32(0.5)),
          ("empty", "F16", [0, 4], b"")],
         metadata={"format": "pt"})
write_st("corpus/safetensors/empty_header.safetensors", [])

with open("corpus/index/two_shards.json", "w") as f:
    json.dump({"metadata": {"total_size": 40},
               "weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                              "model.norm.weight": "model-00002-of-00002.safetensors",
                              "lm_head.weight": "model-00002-of-00002.safetensors"}},
              f, indent=2)
with open("corpus/index/one_shard.json", "w") as f:
    json.dump({"weight_map": {"a": "model.safetensors"}}, f)
PY

# Prompt-cache files of the committed tiny model (written by the CLI, so
# build/ember must exist): six tokens, and a chat prompt past the sliding
# window with marks at its special tokens.
if [ -x ../build/ember ]; then
  mkdir -p corpus/prompt_cache
  rm -f corpus/prompt_cache/*
  (cd .. && build/ember generate -m models/tiny --ids 1,2,3,4,5,6 -n 0 \
     --prompt-cache fuzz/corpus/prompt_cache/six_tokens 2>/dev/null &&
   build/ember generate -m models/tiny -n 2 --prompt-cache fuzz/corpus/prompt_cache/marks_wrapped \
     -p "$(printf '<|im_start|>user\nHello there friend, how are you today?<|im_end|>\n<|im_start|>assistant\n')" \
     >/dev/null 2>&1)
fi
