"""Shared-prefix trees for training the demo model (train.py --share-prefix).

Every chat starts with a system prompt that lists its tools; it is about
half of a chat's tokens and carries no loss.  corpus.py --family K writes
runs of K conversations with one tool list and system prompt; here such a
run becomes trees: one copy of the tokens its conversations share (the
prefix, no loss in it) followed by each conversation's remaining tokens (the
continuations), all in one row.  train.py's attention lets a continuation
see its prefix and itself only, with the positions it has alone, so a tree
trains exactly what its conversations would train one by one (same logits,
and gradients summed over them into the prefix), for the prefix's compute
once.

A document is an array of n + 1 token ids (the last is <|endoftext|>) and
its loss mask of n + 1 flags, as train.py caches them: input slot i holds
ids[i] and learns ids[i + 1] where mask[i + 1] is set.
"""
import numpy as np


def prefix_groups(ids, off, docs, end_id):
    """Runs of consecutive documents (doc indices, in order) whose tokens up
    to and including the first end_id (the end of the system block) are the
    same: corpus.py --family writes a family as such a run."""
    groups, key = [], None
    for d in docs:
        s, e = off[d], off[d + 1]
        x = ids[s:e]
        hit = np.flatnonzero(x == end_id)
        k = x[:hit[0] + 1].tobytes() if len(hit) else None
        if k is not None and k == key:
            groups[-1].append(d)
        else:
            groups.append([d])
        key = k
    return [np.array(g) for g in groups]


def common_len(a, b):
    """Length of the common leading run of two token arrays."""
    m = min(len(a), len(b))
    diff = np.flatnonzero(a[:m] != b[:m])
    return int(diff[0]) if len(diff) else m


def max_shared(ids, mask):
    """The longest prefix (in input slots) a document can give to a tree: no
    target in it carries loss, and at least one input slot stays its own."""
    n = len(ids) - 1
    trained = np.flatnonzero(mask[1:])
    first = int(trained[0]) if len(trained) else n   # slot whose target is the first trained token
    return min(n - 1, first)


def split_trees(docs, T):
    """docs: [(ids, mask)] of one group, in order.  Returns [(L, members)]:
    members share their first L input slots and the tree fits in T slots
    (L + sum of (n_i - L)); a single member (L = 0) is trained as a plain
    document, as is any document longer than T."""
    out, cur, L = [], [], 0
    for ids, mask in docs:
        n = len(ids) - 1
        if n > T:
            out.append((0, [(ids, mask)]))
            continue
        limit = max_shared(ids, mask)
        if cur:
            L2 = min(L, common_len(cur[0][0], ids), limit)
            size = sum(len(x) - 1 for x, _ in cur) + n - len(cur) * L2
            if L2 >= 1 and size <= T:
                cur.append((ids, mask))
                L = L2
                continue
            out.append((L if len(cur) > 1 else 0, cur))
        cur, L = [(ids, mask)], limit
    if cur:
        out.append((L if len(cur) > 1 else 0, cur))
    return out


def tree_slots(L, members):
    """Row slots of a tree: (x, y, m, p) of its prefix and then of each
    continuation (inputs, targets, loss mask, positions)."""
    ids0, mask0 = members[0]
    yield ids0[:L], ids0[1:L + 1], mask0[1:L + 1], np.arange(L)
    for ids, mask in members:
        n = len(ids) - 1
        yield ids[L:n], ids[L + 1:n + 1], mask[L + 1:n + 1], np.arange(L, n)


class TreeSource:
    """Chat documents for --share-prefix: groups (prefix_groups) visited in a
    seeded shuffled order, reshuffled each epoch; next() returns the next
    tree (L, members) of the current group."""

    def __init__(self, arrs, doc_idx, rng, T, end_id):
        self.ids, self.mask, self.off = arrs
        self.groups = prefix_groups(self.ids, self.off, np.sort(np.asarray(doc_idx)), end_id)
        self.rng, self.T, self.pos, self.epoch = rng, T, 0, 0
        self.order = self.rng.permutation(len(self.groups))
        self.pending = []

    def next(self):
        if not self.pending:
            if self.pos == len(self.order):
                self.order, self.pos = self.rng.permutation(len(self.groups)), 0
                self.epoch += 1
            g = self.groups[self.order[self.pos]]
            self.pos += 1
            docs = [(self.ids[self.off[d]:self.off[d + 1]].astype(np.int64), self.mask[self.off[d]:self.off[d + 1]])
                    for d in g]
            self.pending = split_trees(docs, self.T)
        return self.pending.pop(0)
