#!/usr/bin/env python3
"""Trains the demo model's byte-level BPE tokenizer on the demo corpus
(corpus.py's prose.jsonl and chats.jsonl, the chats rendered with
chatfmt.render) and writes tokenizer.json and tokenizer_config.json in the
shape reference/make_tokenizer.py writes (same pre-tokenizer, ByteLevel, the
chat special tokens as added tokens at the top of the id range, the chat
template in tokenizer_config.json).

    /usr/bin/python3 reference/demo/tokenizer.py --corpus build/demo-data --vocab-size 6144 --out models/demo

The pre-tokenization used for counting words approximates the Spark regexes
with Python's re (no \\p{..} classes; exact for ASCII text). It only decides
which merges are learned: ember applies the real regexes at use time. The
output is byte-for-byte deterministic for a given corpus and options.
"""
import argparse
import collections
import heapq
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import chatfmt  # noqa: E402
import corpus  # noqa: E402
import make_tokenizer as mt  # noqa: E402

_SPECIAL = re.compile("|".join(re.escape(t) for t in mt.SPECIAL_TOKENS))
_DIGITS = re.compile(r"\d{1,3}|[一-龥぀-ゟ゠-ヿ]+")
# Split 3 of SPARK_SPLITS with \p{L} ~ [^\W\d_], \p{P}\p{S} ~ [^\w\s]|_.
_WORDS = re.compile(r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\S\r\n]?[^\W\d_]+| ?(?:[^\w\s]|_)+"""
                    r"""|[\r\n]|\s+(?!\S)|\s+|[\s\S]""")


def pretokenize(text):
    """Pieces of text as the Spark pre-tokenizer would cut them (approximately),
    special tokens left out."""
    out = []
    for part in _SPECIAL.split(text):
        pos = 0
        for m in _DIGITS.finditer(part):
            if m.start() > pos:
                out.extend(_WORDS.findall(part, pos, m.start()))
            out.append(m.group())
            pos = m.end()
        if pos < len(part):
            out.extend(_WORDS.findall(part, pos))
    return out


def count_words(texts):
    b2u = mt.bytes_to_unicode()
    pieces = collections.Counter()
    for t in texts:
        pieces.update(pretokenize(t))
    words = collections.Counter()
    for p, c in pieces.items():
        words["".join(b2u[b] for b in p.encode("utf-8"))] += c
    return words


def learn(words, vocab, n_merges):
    """BPE over word counts with incremental pair counts: merges the most
    frequent adjacent pair (ties: the pair that sorts first) while it occurs at
    least twice. A pair whose join is already a token is never merged, so
    training sees exactly the tokenization the merges give at use time."""
    items = sorted(words.items())
    seqs = [list(w) for w, _ in items]
    counts = [c for _, c in items]
    pairs = collections.Counter()
    where = collections.defaultdict(set)
    for i, s in enumerate(seqs):
        for p in zip(s, s[1:]):
            pairs[p] += counts[i]
            where[p].add(i)
    heap = [(-c, p) for p, c in pairs.items()]
    heapq.heapify(heap)
    merges = []
    while len(merges) < n_merges and heap:
        negc, best = heapq.heappop(heap)
        if pairs.get(best, 0) != -negc or -negc <= 0:
            continue
        if -negc < 2:
            break
        joined = best[0] + best[1]
        if joined in vocab:
            del pairs[best]
            continue
        vocab[joined] = len(vocab)
        merges.append(best)
        changed = set()
        for i in sorted(where.pop(best)):
            s, c = seqs[i], counts[i]
            new = mt.apply_merge(s, best)
            for p in zip(s, s[1:]):
                pairs[p] -= c
                changed.add(p)
            for p in zip(new, new[1:]):
                pairs[p] += c
                changed.add(p)
            old_pairs = set(zip(s, s[1:]))
            new_pairs = set(zip(new, new[1:]))
            for p in old_pairs - new_pairs:
                if p != best:
                    where[p].discard(i)
            for p in new_pairs:
                where[p].add(i)
            seqs[i] = new
        pairs.pop(best, None)
        for p in sorted(changed):
            if p == best:
                continue
            c = pairs.get(p, 0)
            if c > 0:
                heapq.heappush(heap, (-c, p))
            else:
                pairs.pop(p, None)
                where.pop(p, None)
    return merges


def training_texts(corpus_dir, prose_chars, chat_chars):
    """The sample the tokenizer learns from: stories and rendered chats, in
    file order, up to the given numbers of characters each."""
    texts, n = [], 0
    for s in corpus.read_prose(corpus_dir):
        if n >= prose_chars:
            break
        texts.append(s)
        n += len(s)
    m = 0
    for c in corpus.read_chats(corpus_dir):
        if m >= chat_chars:
            break
        t = chatfmt.render(c["messages"], c["tools"])
        texts.append(t)
        m += len(t)
    return texts, n, m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True, help="directory written by corpus.py")
    ap.add_argument("--vocab-size", type=int, default=6144)
    ap.add_argument("--out", default="models/demo")
    ap.add_argument("--prose-chars", type=int, default=3_000_000, help="characters of stories to learn from")
    ap.add_argument("--chat-chars", type=int, default=3_000_000, help="characters of rendered chats to learn from")
    args = ap.parse_args()
    t0 = time.time()
    texts, n_prose, n_chat = training_texts(args.corpus, args.prose_chars, args.chat_chars)
    words = count_words(texts)
    b2u = mt.bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    n_merges = args.vocab_size - 256 - len(mt.SPECIAL_TOKENS)
    if n_merges < 0:
        raise SystemExit(f"--vocab-size must be at least {256 + len(mt.SPECIAL_TOKENS)}")
    merges = learn(words, vocab, n_merges)
    learned = len(merges)
    mt.fill_merges(vocab, merges, n_merges)
    tok = mt.tokenizer_json(vocab, merges)
    assert len(tok["model"]["vocab"]) + len(tok["added_tokens"]) == args.vocab_size
    mt.write(args.out, tok)
    print(f"wrote {args.out}/tokenizer.json ({args.vocab_size} ids, {learned} learned merges"
          f"{f', {n_merges - learned} made up' if learned < n_merges else ''}) from {n_prose} chars of stories "
          f"and {n_chat} chars of chats ({len(words)} distinct words) in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
