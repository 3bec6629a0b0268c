#!/usr/bin/env python3
"""A Spark-X2.5 GGUF written by llama.cpp's own Python writer (gguf-py's
GGUFWriter) with the tokenizer and text metadata the way llama.cpp's
convert_hf_to_gguf.py writes them for Spark2_5ForCausalLM, for checking that
ember reads such a file as the model directory it came from
(tests/e2e/gguf_model.sh).

    /usr/bin/python3 reference/gguf_llama_writer.py GGUF_PY MODEL_DIR EMBER_GGUF OUT.gguf \
        [--variant OUT2.gguf KEY=STRING,drop:KEY,...]...

What the converter does, restated (conversion/base.py, gguf-py/gguf/vocab.py,
gguf-py/gguf/metadata.py; transformers is not needed for it here):
  - TextModel.set_vocab -> _set_vocab_gpt2: tokenizer.ggml.model "gpt2",
    tokenizer.ggml.pre "spark2_5" (the hash of its check text names it),
    get_vocab_base's list: one entry per id below config.json's vocab_size,
    "[PADi]" (UNUSED) where the tokenizer has no id i, an added token CONTROL
    when it is special or looks special ("<|...|>"), else USER_DEFINED, every
    other token NORMAL;
  - gguf.SpecialVocab(dir, load_merges=True).add_to_gguf: the merges as
    "a b" strings, bos/eos/pad ids (tokenizer_config.json's tokens first,
    then config.json's ids), add_*_token, tokenizer.chat_template;
  - gguf.Metadata.load + set_gguf_meta_model: general.name etc. and
    general.sampling.* from generation_config.json (its temperature and
    top_p even where do_sample is false).
The architecture keys and the tensors are copied from EMBER_GGUF, a GGUF
ember wrote of the same model (their layout is not what is tested here).
Each --variant writes one more file, metadata only (as the converter's
--vocab-only), with the listed changes: KEY=STRING sets a string key,
drop:KEY leaves a key out; the broken files of the error checks. """
import argparse
import json
import sys
from pathlib import Path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gguf_py")
    ap.add_argument("model_dir")
    ap.add_argument("ember_gguf")
    ap.add_argument("out")
    ap.add_argument("--variant", nargs=2, action="append", default=[], metavar=("OUT", "CHANGES"))
    a = ap.parse_args()
    sys.path.insert(0, a.gguf_py)
    import gguf  # noqa: E402

    d = Path(a.model_dir)
    config = json.loads((d / "config.json").read_text())
    tok = json.loads((d / "tokenizer.json").read_text(encoding="utf-8"))

    # get_vocab_base, without AutoTokenizer: its vocab is model.vocab plus
    # the added tokens
    added = {t["content"]: t for t in tok["added_tokens"]}
    reverse = {i: s for s, i in tok["model"]["vocab"].items()}
    reverse.update({t["id"]: t["content"] for t in tok["added_tokens"]})
    looks_special = lambda s: (s.startswith("<|") and s.endswith("|>")) or s in ("<pad>", "<mask>")
    tokens, types = [], []
    for i in range(config["vocab_size"]):
        if i not in reverse:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
            continue
        s = reverse[i]
        if s in added:
            if added[s]["special"] or looks_special(s):
                types.append(gguf.TokenType.CONTROL)
            else:
                s = s.replace("\u2581", " ")
                types.append(gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
        tokens.append(s)

    reader = gguf.GGUFReader(a.ember_gguf)
    write(gguf, reader, d, tokens, types, a.out, {}, set(), True)
    for out, changes in a.variant:
        sets = dict(c.split("=", 1) for c in changes.split(",") if "=" in c)
        drop = {c[5:] for c in changes.split(",") if c.startswith("drop:")}
        write(gguf, reader, d, tokens, types, out, sets, drop, False)


def write(gguf, reader, d, tokens, types, out, sets, drop, tensors):
    w = gguf.GGUFWriter(out, "spark2_5")
    put = w.add_key_value

    def add_key_value(key, val, vtype, sub_type=None):
        """Every key goes through here (the writer's add_* helpers call it):
        minus the dropped ones, with the replaced strings."""
        if key in drop:
            return
        if key in sets:
            val, vtype, sub_type = sets[key], gguf.GGUFValueType.STRING, None
        put(key, val, vtype, sub_type=sub_type)

    w.add_key_value = add_key_value
    gguf.Metadata.load(None, d, None, 0).set_gguf_meta_model(w)
    for field in reader.fields.values():
        if not field.name.startswith("spark2_5."):
            continue
        vt = field.types[0]
        sub = field.types[-1] if vt == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(field.name, field.contents(), vt, sub_type=sub)

    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("spark2_5")
    w.add_token_list(tokens)
    w.add_token_types(types)
    gguf.SpecialVocab(d, load_merges=True).add_to_gguf(w, quiet=True)

    for t in reader.tensors if tensors else []:
        w.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for t in reader.tensors if tensors else []:
        w.write_tensor_data(t.data, tensor_endianess=reader.endianess)
    w.close()


if __name__ == "__main__":
    main()
