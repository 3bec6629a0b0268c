#!/usr/bin/env bash
# `ember bench llm` runs on the tiny model and reports every documented key
# per context, and `ember bench tts-codes` its per-frame keys (no timing is
# asserted: these machines are shared and noisy).
source "$(dirname "$0")/lib.sh"
json=$("$EMBER" bench llm -m models/tiny --ctx 0,40 --prompt 8 --gen 4 --reps 1 --json 2>&1)
missing=""
for key in ctx prefill_tok_s decode_tok_s bytes_per_token read_bw_gbs roofline_fraction kv_bytes \
           rss_anon_bytes rss_file_bytes results; do
  grep -q "\"$key\"" <<<"$json" || missing="$missing $key"
done
if [ -z "$missing" ]; then pass bench_json_keys; else fail bench_json_keys "missing:$missing" "$json"; fi
# prefill's ops per token: twice the layers' matrix entries, from config.json
if $PY -c '
import json, sys
d, c = json.loads(sys.argv[1]), json.load(open("models/tiny/config.json"))
h, nh, kv, hd, inter = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"], c["intermediate_size"]
gate = nh if c.get("headwise_attn_output_gate") else 0
per = h * (nh + 2 * kv) * hd + h * gate + nh * hd * h + 3 * h * inter
want = 2 * per * c["num_hidden_layers"]
r = d["results"][0]
ok = d["prefill_ops_per_token"] == want and d["int8_peak_gops"] >= 0 and "prefill_peak_fraction" in r
ok = ok and abs(r["prefill_gops"] - r["prefill_tok_s"] * want / 1e9) <= 0.05 + 1e-3 * r["prefill_gops"]
sys.exit(0 if ok else 1)' "$json"; then pass bench_prefill_ops_from_config
else fail bench_prefill_ops_from_config "$json"; fi
n=$(grep -o '"ctx": ' <<<"$json" | wc -l)
if [ "$n" -eq 2 ]; then pass bench_one_result_per_context; else fail bench_one_result_per_context "$json"; fi
# the hybrid cache is smaller than the all-full one at the same context
kv() { grep -o '"kv_bytes": [0-9]*' <<<"$1" | head -1 | grep -o '[0-9]*$'; }
full=$("$EMBER" bench llm -m models/tiny --ctx 100 --prompt 0 --gen 2 --reps 1 --all-full --json 2>&1)
hyb=$("$EMBER" bench llm -m models/tiny --ctx 100 --prompt 0 --gen 2 --reps 1 --json 2>&1)
if [ -n "$(kv "$hyb")" ] && [ "$(kv "$hyb")" -lt "$(kv "$full")" ]; then pass bench_hybrid_cache_smaller
else fail bench_hybrid_cache_smaller "hybrid $(kv "$hyb") vs full $(kv "$full")"; fi
expect_error bench_needs_llm "usage" "$EMBER" bench tts
# `ember bench tts-codes`: the per-frame figures and the roofline they reach
# (bytes per frame over the probe's bandwidth: positive and finite)
json=$("$EMBER" bench tts-codes -m models/tts-tiny --frames 3 --reps 2 --threads 2 --json 2>&1)
if $PY -c '
import json, sys
d = json.loads(sys.argv[1])
keys = ["talker_ms_per_frame", "predictor_ms_per_frame", "total_ms_per_frame", "talker_bytes_per_frame",
        "predictor_bytes_per_frame", "read_bw_gbs", "roofline_fraction"]
ok = all(k in d and d[k] > 0 for k in keys)
ok = ok and abs(d["total_ms_per_frame"] - d["talker_ms_per_frame"] - d["predictor_ms_per_frame"]) < 0.01
sys.exit(0 if ok else 1)' "$json"; then pass bench_tts_codes_keys
else fail bench_tts_codes_keys "$json"; fi
# bench/kernel_ab.sh: the same revision on both sides builds, links (each
# side's library with its symbols made local), runs, and agrees with itself
# bit for bit (snr_db null); a timing is printed, never asserted
ab_work=$(mktemp -d)
json=$(AB_WORK="$ab_work" bench/kernel_ab.sh --a HEAD --b HEAD -- --dtype q8_0 --shape 64x256 \
         --mb 1 --rounds 2 2>/dev/null)
rm -rf "$ab_work"
if $PY -c '
import json, sys
d = json.loads(sys.argv[1])
ok = d["snr_db"] is None and d["b_over_a"] > 0 and d["A"]["layout"] == d["B"]["layout"]
ok = ok and d["A"]["bytes"] == 64 * 256 // 32 * 34 and d["rounds"] == 2
sys.exit(0 if ok else 1)' "$json"; then pass kernel_ab_same_revision_agrees
else fail kernel_ab_same_revision_agrees "$json"; fi
exit $e2e_failed
