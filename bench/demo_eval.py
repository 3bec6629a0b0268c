#!/usr/bin/python3
"""Quality figures of the demo model (issue 17, item 6): held-out agent
conversations scored by ember and by the PyTorch reference, held-out prose
perplexity, and the same table for ember's weight and KV cache formats.

    /usr/bin/python3 bench/demo_eval.py --model models/demo --n 300 --seed 2026 \\
        [--formats all] [--stories 100] [--ref-n 300] [--json out.json] [--markdown]

(bench/demo_eval.sh builds what it needs and runs this.) Held-out set:
reference/demo/corpus.py heldout(seed, n): conversations cut where the
assistant must reply, with the expected tool call(s) or direct answer; seed
2026 is never used in training. Each prompt is rendered as ember's chat
template renders it (chatfmt.render, add_generation_prompt) and tokenized by
`ember tokenize`; ember and the reference both start from those ids.

ember: build/bench/lm_score (bench/lm_score.c) loads the model once per
format and answers every prompt greedily with ember's own sampler, stop ids
(<|im_end|>, <|endoftext|>) and detokenizer, i.e. what `ember generate
--greedy` prints; --cli-check K runs `ember generate --prompt-file --greedy`
itself on the first K prompts and counts the replies that equal it. The same
process scores teacher-forced sequences (log-probabilities and argmaxes), so
one program gives replies, perplexity and top-1 agreement.

Scores (the reply with <think>...</think> removed; an unclosed <think> hides
the rest of the reply):
  tool-call accuracy (kinds call, call2): every <tool_call> block parses as a
    JSON object {"name": str, "arguments": object}, none is left unclosed,
    and the calls are the expected functions in the expected order with
    exactly the expected arguments (JSON equality; numbers as numbers, so
    3 == 3.0, but true is not 1). Text beside the blocks is not scored.
  direct-answer accuracy (the other kinds): no <tool_call> at all, and the
    text (stripped) is right:
      fact       contains the expected sentence (each fact has one phrasing);
      smalltalk  is one of the generator's replies to that group of greetings;
      tools      is one of the generator's two descriptions of the offered
                 tools (or its no-tools sentence);
      refusal    is one of the generator's three refusals plus its "I can ..."
                 list of the offered tools;
      answer     (after tool results) contains every value of the tool
                 results and of the calls' arguments that the expected answer
                 quotes (strings whole, as words, ignoring case; numbers as
                 written, 92.0 also as 92, a negative one also without its
                 sign), and is not empty.
Agreement: the reference (float32, reference/spark_ref.py, greedy with a K/V
past, the same stop ids) decodes the first --ref-n prompts; a conversation
agrees when both token streams are identical; where not, the first divergence
is a near-tie when the reference's top-2 logit gap there is < --tie-gap.
Perplexity: --stories held-out stories (corpus.stories(seed)), each tokenized
as in training (no special tokens, then <|endoftext|>), teacher-forced from
the first token: exp of the mean negative log-likelihood of every later token.
Formats ("WEIGHTS/KV", --formats, default all nine of bf16|q8_0|q4_0 x
f32|f16|q8_0; bf16/f32 always runs first as the baseline): accuracies,
identical replies and greedy agreement with the baseline (tokens equal
position by position until the first divergence, over the baseline's
tokens), teacher-forced top-1 agreement with the baseline on its own replies
(chat) and on the stories (prose), perplexity.

Output: one JSON object on stdout (and in --json FILE); --markdown also
prints the table. Progress and timings go to stderr.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "reference", "demo"))
import chatfmt  # noqa: E402
import chats  # noqa: E402
import corpus  # noqa: E402

CALL_KINDS = ("call", "call2")
DIRECT_KINDS = ("answer", "smalltalk", "fact", "tools", "refusal")
ALL_FORMATS = [f"{w}/{k}" for w in ("bf16", "q8_0", "q4_0") for k in ("f32", "f16", "q8_0")]
BASELINE = "bf16/f32"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --- model files -------------------------------------------------------------

def _read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def stop_ids(model_dir, added):
    """The ids that end a reply, as ember picks them (et_model_stop_ids):
    eos_token_id of generation_config.json and config.json, and the
    eos_token of tokenizer_config.json."""
    out = []

    def add(v):
        for x in (v if isinstance(v, list) else [v]):
            if isinstance(x, int) and x not in out:
                out.append(x)

    for name in ("generation_config.json", "config.json"):
        p = os.path.join(model_dir, name)
        if os.path.exists(p):
            add(_read_json(p).get("eos_token_id"))
    p = os.path.join(model_dir, "tokenizer_config.json")
    if os.path.exists(p):
        eos = _read_json(p).get("eos_token")
        if isinstance(eos, dict):
            eos = eos.get("content")
        if isinstance(eos, str) and eos in added:
            add(added[eos])
    return out


class Detokenizer:
    """Byte-level BPE ids -> text, from tokenizer.json (for the reference's
    replies; ember's come as text from ember)."""

    def __init__(self, path):
        tj = _read_json(path)
        bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
            list(range(ord("®"), ord("ÿ") + 1))
        cs = bs[:]
        n = 0
        for b in range(256):
            if b not in bs:
                bs.append(b)
                cs.append(256 + n)
                n += 1
        byte_of = {chr(c): b for b, c in zip(bs, cs)}
        self.pieces = {}
        for tok, i in tj["model"]["vocab"].items():
            self.pieces[i] = bytes(byte_of[ch] for ch in tok)
        self.added = {}
        for t in tj.get("added_tokens", []):
            self.pieces[t["id"]] = t["content"].encode("utf-8")
            self.added[t["content"]] = t["id"]

    def __call__(self, ids):
        return b"".join(self.pieces.get(i, b"") for i in ids).decode("utf-8", errors="replace")


# --- scoring -------------------------------------------------------------------

THINK = re.compile(r"<think>.*?</think>", re.S)
BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)


def parse_reply(text):
    """(content, calls, malformed): the text outside reasoning and tool-call
    blocks (stripped), the parsed calls [(name, arguments)], and how many
    blocks did not parse or were left unclosed."""
    t = THINK.sub("", text)
    if "<think>" in t:
        t = t[:t.index("<think>")]
    calls, malformed, content, pos = [], 0, [], 0
    for m in BLOCK.finditer(t):
        content.append(t[pos:m.start()])
        pos = m.end()
        try:
            obj = json.loads(m.group(1))
        except ValueError:
            obj = None
        if (isinstance(obj, dict) and set(obj) == {"name", "arguments"} and isinstance(obj["name"], str)
                and isinstance(obj["arguments"], dict)):
            calls.append((obj["name"], obj["arguments"]))
        else:
            malformed += 1
    rest = t[pos:]
    if "<tool_call>" in rest:
        malformed += 1
        rest = rest[:rest.index("<tool_call>")]
    content.append(rest)
    return "".join(content).strip(), calls, malformed


def json_equal(a, b):
    """JSON equality with numbers compared as numbers (3 == 3.0) and booleans
    apart from numbers (true != 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _leaves(v):
    if isinstance(v, dict):
        for x in v.values():
            yield from _leaves(x)
    elif isinstance(v, list):
        for x in v:
            yield from _leaves(x)
    elif v is not None and not isinstance(v, bool):
        yield v


def _spellings(v):
    """Patterns that find a result value as an answer may write it."""
    if isinstance(v, str):
        return [re.compile(r"(?<!\w)" + re.escape(v) + r"(?!\w)", re.I)]
    out = [repr(v)]
    if isinstance(v, float) and v == int(v):
        out.append(str(int(v)))
    if v < 0:
        out += [s[1:] for s in out]
    # a number, not part of a longer one: no digit, point or sign before it,
    # no digit or decimal part after it
    return [re.compile(r"(?<![\w.\-])" + re.escape(s) + r"(?![\w]|\.\d)") for s in out]


def _quoted_ok(expected, reply, results):
    """Every value of the tool results (and of the calls' arguments) that the
    expected answer quotes is in the reply, in one of the spellings the
    expected answer used (strings: ignoring case)."""
    for v in (x for r in results for x in _leaves(r)):
        used = [p for p in _spellings(v) if p.search(expected)]
        if used and not any(p.search(reply) for p in used):
            return False
    return True


def _tool_values(messages):
    """The trailing tool results and the arguments of the calls they answer."""
    out = []
    for m in reversed(messages):
        if m["role"] == "tool":
            try:
                out.append(json.loads(m["content"]))
            except ValueError:
                out.append(m["content"])
            continue
        if m["role"] == "assistant":
            out += [c["function"]["arguments"] for c in m.get("tool_calls") or []]
        break
    return out


def direct_variants(item):
    """The replies the generator could have written here (None: scored otherwise)."""
    kind, expected = item["kind"], item["expected"]["direct"]
    names = [t["function"]["name"] for t in item["tools"]]
    if kind == "smalltalk":
        for _, answers in chats.SMALLTALK:
            if expected in answers:
                return answers
        return [expected]
    if kind == "tools":
        if not names:
            return ["I have no tools in this conversation, but I can answer questions and chat."]
        ab = chats._abilities(names)
        return [f"I can {ab}.", "I have these tools: " + ", ".join(names) + f". So I can {ab}."]
    if kind == "refusal":
        can = f" I can {chats._abilities(names)}." if names else ""
        return [r + can for r in ("I can't do that with the tools I have.",
                                  "Sorry, I can't help with that: none of my tools can do it.",
                                  "I'm not able to do that with the tools I have.")]
    return None


def score(item, text):
    """(correct, detail) of one reply."""
    content, calls, malformed = parse_reply(text)
    kind = item["kind"]
    if kind in CALL_KINDS:
        want = item["expected"]["call"]
        ok = (malformed == 0 and len(calls) == len(want) and
              all(n == w["name"] and json_equal(a, w["arguments"]) for (n, a), w in zip(calls, want)))
        # partial credit, to see a model on its way: the right functions, and
        # each expected argument (by position of its call) with the right value
        fn_ok = malformed == 0 and [n for n, _ in calls] == [w["name"] for w in want]
        args_total = sum(len(w["arguments"]) for w in want)
        args_right = sum(1 for (n, a), w in zip(calls, want) if isinstance(a, dict)
                         for k, v in w["arguments"].items() if k in a and json_equal(a[k], v))
        return ok, {"calls": len(calls), "malformed": malformed, "fn_ok": fn_ok,
                    "args_right": args_right, "args_total": args_total}
    expected = item["expected"]["direct"]
    if calls or malformed or "<tool_call>" in content:
        return False, {"calls": len(calls), "malformed": malformed}
    if kind == "fact":
        ok = expected in content
    elif kind == "answer":
        ok = bool(content) and _quoted_ok(expected, content, _tool_values(item["messages"]))
    else:
        ok = content in direct_variants(item)
    return ok, {"exact": content == expected}


def accuracy(items, texts):
    """Per-kind and overall accuracies of replies texts[i] to items[i]."""
    per = {}
    fn_ok = args_right = args_total = 0
    for item, text in zip(items, texts):
        ok, det = score(item, text)
        p = per.setdefault(item["kind"], {"n": 0, "correct": 0, "exact": 0})
        p["n"] += 1
        p["correct"] += ok
        p["exact"] += det.get("exact", ok)
        fn_ok += det.get("fn_ok", 0)
        args_right += det.get("args_right", 0)
        args_total += det.get("args_total", 0)

    def frac(kinds):
        n = sum(per[k]["n"] for k in kinds if k in per)
        return None if n == 0 else round(sum(per[k]["correct"] for k in kinds if k in per) / n, 4)

    for p in per.values():
        p["accuracy"] = round(p["correct"] / p["n"], 4)
    n_calls = sum(per[k]["n"] for k in CALL_KINDS if k in per)
    return {"tool_call_accuracy": frac(CALL_KINDS), "direct_accuracy": frac(DIRECT_KINDS),
            "function_accuracy": round(fn_ok / n_calls, 4) if n_calls else None,
            "argument_accuracy": round(args_right / args_total, 4) if args_total else None,
            "n_tool_call": sum(per[k]["n"] for k in CALL_KINDS if k in per),
            "n_direct": sum(per[k]["n"] for k in DIRECT_KINDS if k in per),
            "per_kind": {k: per[k] for k in CALL_KINDS + DIRECT_KINDS if k in per}}


def gold_reply(item, reasoning=None):
    """The reply the generator wrote (as the template renders it, without
    <|im_end|>), optionally with reasoning."""
    exp = item["expected"]
    if "call" in exp:
        msg = {"role": "assistant", "content": "",
               "tool_calls": [{"type": "function", "function": c} for c in exp["call"]]}
    else:
        msg = {"role": "assistant", "content": exp["direct"]}
    if reasoning:
        msg["reasoning_content"] = reasoning
    text, spans = chatfmt.render_with_spans(item["messages"] + [msg], item["tools"])
    s, e = spans[-1]
    return text[s:e - len("<|im_end|>")]


def _altered(v):
    if isinstance(v, bool):
        return not v
    if isinstance(v, (int, float)):
        return v + 1
    if isinstance(v, str):
        return v + "x"
    if isinstance(v, list):
        return v + ["x"]
    return {"x": 1}


def self_test(items):
    """The scorer on the generator's own replies (all right, with or without
    reasoning, integers also written as 5.0) and on altered ones (all
    wrong). Returns a list of failures."""
    bad = []
    for i, it in enumerate(items):
        gold = gold_reply(it)
        wrong = []
        for text in (gold, gold_reply(it, "Let me think about it.")):
            if not score(it, text)[0]:
                bad.append(f"{i} {it['kind']}: the generator's reply scored wrong: {text!r}")
        if it["kind"] in CALL_KINDS:
            calls = it["expected"]["call"]
            c0 = calls[0]
            k = next(iter(c0["arguments"]))
            num = [(j, kk) for j, c in enumerate(calls) for kk, v in c["arguments"].items()
                   if isinstance(v, int) and not isinstance(v, bool)]
            if num:
                j, kk = num[0]
                f = json.loads(json.dumps(calls))
                f[j]["arguments"][kk] = float(f[j]["arguments"][kk])
                text = "".join(f"<tool_call>\n{json.dumps(c)}\n</tool_call>" for c in f)
                if not score(it, text)[0]:
                    bad.append(f"{i}: {kk} written as a float scored wrong: {text!r}")
            changed = json.loads(json.dumps(calls))
            changed[0]["arguments"][k] = _altered(c0["arguments"][k])
            renamed = json.loads(json.dumps(calls))
            renamed[0]["name"] += "_x"
            dup = {"role": "assistant", "content": ""}
            for alt in (changed, renamed, calls[:-1] if len(calls) > 1 else calls + calls, calls[::-1]):
                if alt == calls:
                    continue
                dup["tool_calls"] = [{"type": "function", "function": c} for c in alt]
                t, sp = chatfmt.render_with_spans(it["messages"] + [dup], it["tools"])
                wrong.append(t[sp[-1][0]:sp[-1][1] - len("<|im_end|>")])
            wrong.append(gold[:gold.rindex("</tool_call>")])
            wrong.append(gold.replace('"arguments": ', '"args": ', 1))
        else:
            wrong.append(gold + '\n<tool_call>\n{"name": "get_time", "arguments": {"city": "Oslo"}}\n</tool_call>')
            wrong.append("Hmm.")
            wrong.append("<think>\n" + gold)
        for text in wrong:
            if score(it, text)[0]:
                bad.append(f"{i} {it['kind']}: an altered reply scored right: {text!r}")
    return bad


# --- ember -----------------------------------------------------------------------

def ember_tokenize(ember, model, texts, special=True):
    inp = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in texts)
    cmd = [ember, "tokenize", "-m", model, "--jsonl"] + ([] if special else ["--no-special"])
    out = subprocess.run(cmd, input=inp.encode("utf-8"), stdout=subprocess.PIPE, check=True).stdout
    ids = [json.loads(line) for line in out.decode("utf-8").splitlines() if line.strip()]
    if len(ids) != len(texts):
        raise SystemExit(f"ember tokenize: {len(ids)} results for {len(texts)} texts")
    return ids


def lm_score(scorer, model, fmt, threads, requests):
    weights, kv = fmt.split("/")
    cmd = [scorer, "-m", model, "--dtype", weights, "--kv-type", kv, "--threads", str(threads)]
    inp = "".join(json.dumps(r) + "\n" for r in requests)
    p = subprocess.run(cmd, input=inp.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = p.stdout.decode("utf-8").splitlines()
    if p.returncode != 0 or len(lines) != len(requests):
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr.decode()[-2000:]}")
    out = [json.loads(line) for line in lines]
    bad = [o["error"] for o in out if "error" in o]
    if bad:
        raise SystemExit(f"lm_score: {bad[0]}")
    return out


def cli_check(ember, model, prompts, texts, n_gen, threads):
    """Replies of `ember generate --prompt-file --greedy` equal to lm_score's."""
    equal = 0
    with tempfile.TemporaryDirectory() as d:
        for i, (prompt, text) in enumerate(zip(prompts, texts)):
            path = os.path.join(d, f"p{i}.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write(prompt)
            out = subprocess.run([ember, "generate", "-m", model, "--prompt-file", path, "-n", str(n_gen),
                                  "--greedy", "--threads", str(threads), "--dtype", "bf16"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout
            equal += out.decode("utf-8", errors="replace")[:-1] == text   # generate ends with "\n"
    return equal


def common_prefix(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


# --- reference -----------------------------------------------------------------

def reference_run(model, prompts, stories, stops, n_gen, threads):
    import torch
    sys.path.insert(0, os.path.join(ROOT, "reference"))
    import spark_ref
    torch.set_num_threads(threads)
    m = spark_ref.SparkRef.load(model, torch.float32)
    gens, gaps = [], []
    t0 = time.time()
    for k, ids in enumerate(prompts):
        logits, past = m.forward(ids, rows=[len(ids) - 1])
        out, gap = [], []
        for _ in range(n_gen):
            top = logits[-1].topk(2).values
            gap.append(float(top[0] - top[1]))
            tok = int(logits[-1].argmax())
            out.append(tok)
            if tok in stops or len(out) == n_gen:
                break
            logits, past = m.forward([tok], past=past)
        gens.append(out)
        gaps.append(gap)
        if (k + 1) % 25 == 0:
            log(f"  reference: {k + 1}/{len(prompts)} conversations, {time.time() - t0:.0f} s")
    t1 = time.time()
    nll, count = 0.0, 0
    for ids in stories:
        lp = torch.log_softmax(m(ids[:-1]).double(), dim=-1)
        nll -= float(lp[torch.arange(len(ids) - 1), torch.as_tensor(ids[1:])].sum())
        count += len(ids) - 1
    return gens, gaps, (math.exp(nll / count) if count else None), t1 - t0, time.time() - t1


# --- main ------------------------------------------------------------------------

def parse_formats(s):
    fmts = ALL_FORMATS if s == "all" else [f.strip() for f in s.split(",") if f.strip()]
    for f in fmts:
        w, _, k = f.partition("/")
        if w not in ("f32", "f16", "bf16", "q8_0", "q4_0") or k not in ("f32", "f16", "q8_0"):
            raise SystemExit(f"--formats: {f}: want WEIGHTS/KV, WEIGHTS f32|f16|bf16|q8_0|q4_0, KV f32|f16|q8_0")
    return [BASELINE] + [f for f in fmts if f != BASELINE]


def markdown(res):
    def pct(x):
        return "-" if x is None else f"{100 * x:.1f}%"

    def num(x, f="{:.3f}"):
        return "-" if x is None else f.format(x)

    rows = ["| run | weights | KV | tool-call acc | (function / arguments) | direct acc | identical to bf16 | "
            "greedy agree | top-1 chat (TF) | top-1 prose (TF) | perplexity |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]

    def parts(r):
        return f"{pct(r.get('function_accuracy'))} / {pct(r.get('argument_accuracy'))}"
    ref = res.get("reference")
    if ref:
        rows.append(f"| reference fp32 (first {ref['n']}) | as stored, upcast | f32 | "
                    f"{pct(ref['tool_call_accuracy'])} | {parts(ref)} | {pct(ref['direct_accuracy'])} | "
                    f"{pct(ref['identical_to_ember'])} (to ember) | - | - | - | {num(ref['perplexity'])} |")
        e = ref["ember_same_conversations"]
        rows.append(f"| ember (same {ref['n']}) | bf16 | f32 | {pct(e['tool_call_accuracy'])} | {parts(e)} | "
                    f"{pct(e['direct_accuracy'])} | - | - | - | - | - |")
    for r in res["ember"]:
        rows.append(f"| ember | {r['weights']} | {r['kv']} | {pct(r['tool_call_accuracy'])} | {parts(r)} | "
                    f"{pct(r['direct_accuracy'])} | {pct(r['identical_to_baseline'])} | "
                    f"{pct(r['greedy_agreement'])} | {pct(r['top1_agreement_chat'])} | "
                    f"{pct(r['top1_agreement_prose'])} | {num(r['perplexity'])} |")
    # accuracy per kind: ember's formats side by side (and the reference)
    heads = [f"{r['weights']}/{r['kv']}" for r in res["ember"]]
    rows += ["", "| kind | n | " + " | ".join(heads) + (" | reference (n) |" if ref else " |"),
             "|---|---|" + "---|" * (len(heads) + (1 if ref else 0))]
    for k in CALL_KINDS + DIRECT_KINDS:
        base = res["ember"][0]["per_kind"].get(k)
        if not base:
            continue
        cells = [pct(r["per_kind"][k]["accuracy"]) for r in res["ember"]]
        if ref:
            rk = ref["per_kind"].get(k)
            cells.append(f"{pct(rk['accuracy'])} ({rk['n']})" if rk else "-")
        rows.append(f"| {k} | {base['n']} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "demo"))
    ap.add_argument("--n", type=int, default=300, help="held-out conversations")
    ap.add_argument("--seed", type=int, default=corpus.HELDOUT_SEED)
    ap.add_argument("--formats", default="all", help="WEIGHTS/KV,... or all (bf16/f32 always runs first)")
    ap.add_argument("--stories", type=int, default=100, help="held-out stories for perplexity (0: none)")
    ap.add_argument("--ref-n", type=int, default=None,
                    help="conversations the reference decodes (default all; 0: no reference)")
    ap.add_argument("--ref-stories", type=int, default=None, help="stories the reference scores (default all)")
    ap.add_argument("--max-tokens", type=int, default=160, help="reply length limit")
    ap.add_argument("--tie-gap", type=float, default=1e-3, help="a divergence is a near-tie below this top-2 gap")
    ap.add_argument("--cli-check", type=int, default=20,
                    help="prompts also answered by `ember generate --greedy` and compared (0: none)")
    ap.add_argument("--threads", type=int, default=1, help="ember and torch threads")
    ap.add_argument("--ember", default=os.path.join(ROOT, "build", "ember"))
    ap.add_argument("--scorer", default=os.path.join(ROOT, "build", "bench", "lm_score"))
    ap.add_argument("--json", help="also write the result here")
    ap.add_argument("--markdown", action="store_true", help="print the table in Markdown too")
    ap.add_argument("--self-test", action="store_true",
                    help="only check the scorer on the generator's own and on altered replies (no model)")
    ap.add_argument("--replies", help="write every reply (ember baseline and reference) as JSON lines here")
    a = ap.parse_args()
    fmts = parse_formats(a.formats)
    if a.self_test:
        items = corpus.heldout(a.seed, a.n)
        bad = self_test(items)
        for b in bad[:20]:
            print(b)
        print(f"scorer self-test: {len(items)} conversations, {len(bad)} failures")
        sys.exit(1 if bad else 0)
    model = a.model
    t_all = time.time()
    for f in ("config.json", "tokenizer.json"):
        if not os.path.exists(os.path.join(model, f)):
            raise SystemExit(f"{model}: no {f}")
    for b in (a.ember, a.scorer):
        if not os.access(b, os.X_OK):
            raise SystemExit(f"{b}: not built (make build/ember build/bench/lm_score)")
    detok = Detokenizer(os.path.join(model, "tokenizer.json"))
    stops = stop_ids(model, detok.added)
    eot = detok.added.get("<|endoftext|>")

    t0 = time.time()
    items = corpus.heldout(a.seed, a.n)
    prompts = [chatfmt.render(it["messages"], it["tools"], add_generation_prompt=True) for it in items]
    story_texts = corpus.stories(a.seed, a.stories) if a.stories else []
    prompt_ids = ember_tokenize(a.ember, model, prompts)
    story_ids = [s + [eot] for s in ember_tokenize(a.ember, model, story_texts, special=False)] if story_texts else []
    kinds = {}
    for it in items:
        kinds[it["kind"]] = kinds.get(it["kind"], 0) + 1
    timing = {"data_s": round(time.time() - t0, 2)}
    log(f"demo_eval: {len(items)} conversations {kinds}, prompts {min(map(len, prompt_ids))}-"
        f"{max(map(len, prompt_ids))} tokens; {len(story_ids)} stories "
        f"({sum(map(len, story_ids))} tokens); stop ids {stops}")

    rows, base = [], None
    for fmt in fmts:
        t0 = time.time()
        reqs = [{"ids": ids, "gen": a.max_tokens} for ids in prompt_ids]
        reqs += [{"ids": ids, "score_from": 1} for ids in story_ids]
        if base is not None:
            reqs += [{"ids": ids + g["gen"], "score_from": len(ids)} for ids, g in zip(prompt_ids, base["gens"])]
        out = lm_score(a.scorer, model, fmt, a.threads, reqs)
        gens, prose = out[:len(items)], out[len(items):len(items) + len(story_ids)]
        chat_tf = out[len(items) + len(story_ids):]
        texts = [g["text"] for g in gens]
        r = {"weights": fmt.split("/")[0], "kv": fmt.split("/")[1]}
        r.update(accuracy(items, texts))
        finish = {}
        for g in gens:
            finish[g["finish"]] = finish.get(g["finish"], 0) + 1
        r["finish"] = finish
        r["tokens_generated"] = sum(len(g["gen"]) for g in gens)
        n_lp = sum(len(p["logprob"]) for p in prose)
        r["perplexity"] = round(math.exp(-sum(sum(p["logprob"]) for p in prose) / n_lp), 4) if n_lp else None
        # the detokenizer here agrees with ember's (checks the reference's texts below)
        r["detok_mismatch"] = sum(detok([t for t in g["gen"] if t not in stops]) != g["text"] for g in gens)
        if base is None:
            base = {"gens": gens, "prose": prose, "texts": texts}
            r.update(identical_to_baseline=1.0, greedy_agreement=1.0, top1_agreement_chat=1.0,
                     top1_agreement_prose=1.0 if prose else None)
        else:
            bg = [g["gen"] for g in base["gens"]]
            r["identical_to_baseline"] = round(sum(g["gen"] == b for g, b in zip(gens, bg)) / len(gens), 4)
            r["greedy_agreement"] = round(sum(common_prefix(g["gen"], b) for g, b in zip(gens, bg)) /
                                          max(1, sum(map(len, bg))), 4)
            hit = sum(x == y for c, b in zip(chat_tf, bg) for x, y in zip(c["argmax"], b))
            r["top1_agreement_chat"] = round(hit / max(1, sum(map(len, bg))), 4)
            if prose:
                hit = sum(x == y for p, q in zip(prose, base["prose"]) for x, y in zip(p["argmax"], q["argmax"]))
                r["top1_agreement_prose"] = round(hit / n_lp, 4)
            else:
                r["top1_agreement_prose"] = None
        r["time_s"] = round(time.time() - t0, 2)
        log(f"ember {fmt}: tool-call {r['tool_call_accuracy']} direct {r['direct_accuracy']} "
            f"ppl {r['perplexity']} identical {r['identical_to_baseline']} ({r['time_s']} s)")
        rows.append(r)
    timing["ember_s"] = round(sum(r["time_s"] for r in rows), 2)

    res = {"model": os.path.relpath(os.path.abspath(model), ROOT), "seed": a.seed, "n": len(items),
           "kinds": kinds, "stories": len(story_ids), "story_tokens": sum(len(s) - 1 for s in story_ids),
           "max_tokens": a.max_tokens, "stop_ids": stops, "threads": a.threads}

    if a.cli_check:
        t0 = time.time()
        k = min(a.cli_check, len(items))
        eq = cli_check(a.ember, model, prompts[:k], base["texts"][:k], a.max_tokens, a.threads)
        res["cli_check"] = {"n": k, "equal": eq}
        timing["cli_check_s"] = round(time.time() - t0, 2)
        log(f"ember generate --greedy: {eq}/{k} replies equal to lm_score's")

    ref_n = len(items) if a.ref_n is None else min(a.ref_n, len(items))
    if ref_n:
        n_st = len(story_ids) if a.ref_stories is None else min(a.ref_stories, len(story_ids))
        log(f"reference: {ref_n} conversations, {n_st} stories (float32, {a.threads} thread(s))")
        gens, gaps, ppl, tg, tp = reference_run(model, prompt_ids[:ref_n], story_ids[:n_st], stops,
                                                a.max_tokens, a.threads)
        ref_texts = [detok([t for t in g if t not in stops]) for g in gens]
        ref = {"n": ref_n, "stories": n_st}
        ref.update(accuracy(items[:ref_n], ref_texts))
        ref["perplexity"] = None if ppl is None else round(ppl, 4)
        e_ids = [g["gen"] for g in base["gens"][:ref_n]]
        same = [g == e for g, e in zip(gens, e_ids)]
        ref["identical_to_ember"] = round(sum(same) / ref_n, 4)
        div = []
        for i, (g, e, gp) in enumerate(zip(gens, e_ids, gaps)):
            if g != e:
                k = common_prefix(g, e)
                gap = gp[k] if k < len(gp) else None
                div.append({"conversation": i, "position": k, "reference_top2_gap": gap,
                            "near_tie": gap is not None and gap < a.tie_gap})
        ref["divergences"] = div
        ref["divergences_not_near_tie"] = sum(not d["near_tie"] for d in div)
        ref["ember_same_conversations"] = accuracy(items[:ref_n], base["texts"][:ref_n])
        ref["time_s"] = {"greedy": round(tg, 2), "perplexity": round(tp, 2)}
        timing["reference_s"] = round(tg + tp, 2)
        res["reference"] = ref
        log(f"reference: tool-call {ref['tool_call_accuracy']} direct {ref['direct_accuracy']} ppl "
            f"{ref['perplexity']}; identical to ember {ref['identical_to_ember']}, "
            f"{len(div)} divergences ({ref['divergences_not_near_tie']} not at a near-tie)")
        if a.replies:
            base["ref_texts"] = ref_texts
    res["ember"] = rows
    timing["total_s"] = round(time.time() - t_all, 2)
    res["timing"] = timing
    if a.replies:
        with open(a.replies, "w", encoding="utf-8") as f:
            for i, it in enumerate(items):
                rec = {"i": i, "kind": it["kind"], "expected": it["expected"], "ember": base["texts"][i],
                       "ember_ok": score(it, base["texts"][i])[0]}
                if "ref_texts" in base and i < len(base["ref_texts"]):
                    rec["reference"] = base["ref_texts"][i]
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    text = json.dumps(res, indent=1)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    print(text)
    if a.markdown:
        print()
        print(markdown(res))


if __name__ == "__main__":
    main()
