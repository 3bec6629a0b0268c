#!/usr/bin/env python3
"""Writes a Spark-X2.5-style byte-level BPE tokenizer (tokenizer.json and
tokenizer_config.json) with exactly --vocab-size ids, for test checkpoints.

The tokenizer has the shape of the real one (spec/spark-x2.5.md, "Tokenizer"):
four regex Split pre-tokenizers then ByteLevel(use_regex=false), a BPE model
whose first 256 ids are the byte-level alphabet, merges learned from the
built-in English text and code below, and the chat special tokens as added
tokens at the top of the id range. When the text runs out of pairs to merge
(large vocabularies), the remaining merges are made up deterministically:
they are valid merges, just not learned ones.

Only the standard library is used; the output is byte-for-byte deterministic.

    /usr/bin/python3 reference/make_tokenizer.py --vocab-size 512 --out models/tiny
"""
import argparse
import collections
import json
import os
import re

# The four pre-tokenizer regexes of Spark-X2.5, in order.
SPARK_SPLITS = [
    r"\p{N}{1,3}",
    r"[一-龥぀-ゟ゠-ヿ]+",
    r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+",
    r"\p{N}",
]

# As in Qwen3's tokenizer, only the control tokens are "special" (dropped by
# decode(skip_special_tokens=True)); the tool-call and think tags stay text,
# so a response's tool calls and reasoning survive detokenization.
CONTROL_TOKENS = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>",
                  "<think>", "</think>", "<tool_response>", "</tool_response>"]

TRAINING_TEXT = """
The model reads the prompt, thinks about the request, and then answers the user.
When a tool is needed it writes a tool call with a name and JSON arguments, waits
for the tool response, and continues the conversation with the result in mind.
Small models run on phones, laptops and single board computers; they must load
quickly, stream tokens with low latency and never waste memory. The runtime keeps
the weights mapped read-only, sizes every buffer when a session starts, and uses
one thread pool for the whole engine. Tokens are decoded one at a time, and the
text is printed as soon as a complete character is available.
Hello, world! How are you today? I'm fine, thanks. It's a beautiful day, isn't it?
We'll see what the weather brings tomorrow; they've said it would rain in the
morning and clear up in the afternoon. The quick brown fox jumps over the lazy dog.
In 2024 the team shipped 3 releases, fixed 128 bugs and wrote 4096 tests.
def tokenize(text):
    ids = []
    for word in text.split():
        ids.extend(encode_word(word))
    return ids

for (int i = 0; i < n; i++) {
    sum += values[i] * weights[i];
}
if (status != EMBER_OK) {
    fprintf(stderr, "error: %s\\n", ember_last_error());
    return 1;
}
{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
import json
with open("config.json") as f:
    config = json.load(f)
print(config["hidden_size"], config["num_attention_heads"])
"""


def bytes_to_unicode():
    """GPT-2's byte -> printable character table used by ByteLevel."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def pretokenize(text):
    # An approximation of the Spark splits with Python's re (no \p{..}): it
    # only decides which merges get learned; the JSON carries the real regexes.
    return re.findall(r"\d{1,3}|[^\W\d_]+| ?[^\w\s]+|[\r\n]|\s+(?!\S)|\s+| ?[^\s\d]+", text)


def learn_merges(words, n_merges):
    """Classic BPE: repeatedly merge the most frequent adjacent pair (ties:
    the pair that sorts first), until n_merges or no pair occurs twice."""
    seqs = {w: list(w) for w in words}
    merges = []
    while len(merges) < n_merges:
        pairs = collections.Counter()
        for w, count in words.items():
            s = seqs[w]
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += count
        if not pairs:
            break
        best_count = max(pairs.values())
        if best_count < 2:
            break
        best = min(p for p, c in pairs.items() if c == best_count)
        merges.append(best)
        for w, s in seqs.items():
            seqs[w] = apply_merge(s, best)
    return merges


def apply_merge(symbols, pair):
    """symbols with every left-to-right occurrence of pair joined into one."""
    joined, out, i = pair[0] + pair[1], [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == pair[0] and symbols[i + 1] == pair[1]:
            out.append(joined)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def build(vocab_size):
    n_base = 256
    n_merges = vocab_size - n_base - len(SPECIAL_TOKENS)
    if n_merges < 0:
        raise SystemExit(f"--vocab-size must be at least {n_base + len(SPECIAL_TOKENS)}")
    b2u = bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    words = collections.Counter("".join(b2u[b] for b in w.encode("utf-8")) for w in pretokenize(TRAINING_TEXT))
    merges = []
    for a, b in learn_merges(words, n_merges):
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
            merges.append((a, b))
    fill_merges(vocab, merges, n_merges)
    tok = tokenizer_json(vocab, merges)
    assert len(tok["model"]["vocab"]) + len(tok["added_tokens"]) == vocab_size
    return tok


def fill_merges(vocab, merges, n_merges):
    """Made-up merges for the rest, up to n_merges: existing token + one byte
    token, in id order (added to vocab and merges in place)."""
    b2u = bytes_to_unicode()
    tokens = list(vocab)
    k = 0
    while len(merges) < n_merges:
        left = tokens[k]
        for b in range(256):
            if len(merges) == n_merges:
                break
            right = b2u[b]
            if left + right not in vocab:
                vocab[left + right] = len(vocab)
                tokens.append(left + right)
                merges.append((left, right))
        k += 1


def tokenizer_json(vocab, merges):
    """The tokenizer.json dict for a byte-level vocab (token -> id, ids 0..n-1)
    and its merges ([(left, right)]): the Spark pre-tokenizer, ByteLevel, and
    SPECIAL_TOKENS as added tokens after the vocab."""
    added = [{"id": len(vocab) + i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": t in CONTROL_TOKENS} for i, t in enumerate(SPECIAL_TOKENS)]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [{"type": "Split", "pattern": {"Regex": r}, "behavior": "Isolated", "invert": False}
                              for r in SPARK_SPLITS] + [byte_level],
        },
        "post_processor": byte_level,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [[a, b] for a, b in merges]},
    }


DEFAULT_TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spark_chat_template.jinja")


def write(out, tok, template=DEFAULT_TEMPLATE):
    """Writes out/tokenizer.json and out/tokenizer_config.json (with the chat
    template when the file exists); returns whether the template was embedded."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False, indent=1)
        f.write("\n")
    config = {
        "tokenizer_class": "Qwen2Tokenizer",
        "model_max_length": 131072,
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "clean_up_tokenization_spaces": False,
        "add_prefix_space": False,
        "split_special_tokens": False,
        "added_tokens_decoder": {str(t["id"]): {k: v for k, v in t.items() if k != "id"} for t in tok["added_tokens"]},
    }
    if os.path.exists(template):
        with open(template, encoding="utf-8") as f:
            config["chat_template"] = f.read()
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False, indent=2)
        f.write("\n")
    return "chat_template" in config


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vocab-size", type=int, default=512)
    ap.add_argument("--out", default="models/tiny", help="directory for tokenizer.json and tokenizer_config.json")
    ap.add_argument("--template", default=DEFAULT_TEMPLATE,
                    help="chat template to embed (left out when the file does not exist)")
    args = ap.parse_args()
    tok = build(args.vocab_size)
    has_template = write(args.out, tok, args.template)
    print(f"wrote {args.out}/tokenizer.json ({args.vocab_size} ids, {len(tok['model']['merges'])} merges)"
          + ("" if has_template else "; no chat template (template file not found)"))


if __name__ == "__main__":
    main()
