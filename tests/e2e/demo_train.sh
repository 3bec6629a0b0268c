#!/usr/bin/env bash
# The demo model's training code (reference/demo, issue 17), not a training
# run: train.py --check (its model equals reference/spark_ref.py; packed rows
# and shared-prefix trees give the logits and gradients of their documents
# one by one; tool-call argument spans and their token flags are exact,
# and --arg-weight 1 is the plain loss), and corpus families (corpus.py --family) that share one tool
# list and system prompt, split by shared_prefix.py into trees that fit a row
# and carry no loss in their prefix.
source "$(dirname "$0")/lib.sh"
if ! have_torch; then
  echo "SKIP demo_train_check, demo_train_families: python3-torch is not installed"; exit 0
fi
expect_ok demo_train_check "$PY" reference/demo/train.py --check --threads 1

families() {
  "$PY" - <<'PY'
import sys
import numpy as np
sys.path.insert(0, "reference/demo")
import chatfmt, corpus, shared_prefix
K = 4
convs = corpus.chats(5, 3 * K, family=K)
heads = [chatfmt.render(c["messages"][:1] if c["messages"][0]["role"] == "system" else [], c["tools"]) for c in convs]
same = all(heads[i] == heads[i - i % K] for i in range(len(heads)))
differ = len({heads[i] for i in range(0, len(heads), K)}) > 1
assert same and differ, "families: each run of K shares its system block, the runs differ"
assert corpus.chats(5, 6) == corpus.chats(5, 6, family=1), "family=1 is the old stream"
# split_trees on token-like arrays: a common head of 30 tokens whose end carries loss
rng = np.random.default_rng(0)
head = rng.integers(0, 100, 30)
docs = []
for n in (40, 55, 38, 60, 45):
    ids = np.r_[head, rng.integers(0, 100, n)]
    mask = np.r_[np.zeros(21, np.uint8), np.ones(len(ids) - 21, np.uint8)]   # loss from inside the head
    docs.append((ids, mask))
trees = shared_prefix.split_trees(docs, 200)
assert sum(len(m) for _, m in trees) == len(docs), "every document in one tree"
for L, members in trees:
    slots = sum(len(x) - 1 for x, _ in members) - (len(members) - 1) * L
    assert slots <= 200, "a tree fits its row"
    if len(members) > 1:
        assert 1 <= L <= 30 and not any(m[1:L + 1].any() for _, m in members), "prefix: shared, no loss"
assert any(len(m) > 1 for _, m in trees), "some documents share"
PY
}
expect_ok demo_train_families families
exit $e2e_failed
