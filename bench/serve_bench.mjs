// `ember serve` throughput and latency (a benchmark, not a test; prints JSON):
// aggregate tokens/s with 1, 4 and 8 concurrent streaming chat requests (over
// the wall clock; each stream's decode rate summed; and the steady state
// while all of them decode),
// time to first token p50/p99 over every request, and the second turn of a
// ~2k-token agent conversation with and without prefix reuse (run it against
// two servers, --prefix-cache 256 and 0).
//   node bench/serve_bench.mjs BASE_URL MODEL [BASE_URL_NO_PREFIX_CACHE]
const [base, model, baseNoCache] = process.argv.slice(2);
const now = () => performance.now();

// One streamed chat request: time to the first content delta and the count
// of content deltas (one per token for this model's detokenizer).
async function stream(url, messages, maxTokens) {
  const t0 = now();
  const res = await fetch(url + '/v1/chat/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model, messages, max_tokens: maxTokens, temperature: 0, stream: true,
                           stream_options: { include_usage: true } }),
  });
  if (!res.ok) throw new Error('status ' + res.status);
  let ttft = null, tokens = 0, buf = '';
  const arrivals = []; // when each content delta came, ms since the start of the run
  const dec = new TextDecoder();
  for await (const part of res.body) {
    buf += dec.decode(part, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i); buf = buf.slice(i + 2);
      if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
      const c = JSON.parse(ev.slice(6));
      if (c.usage) tokens = c.usage.completion_tokens;
      else if (c.choices && c.choices.length) {
        if (ttft === null) ttft = now() - t0;
        arrivals.push(now());
      }
    }
  }
  return { ttft, tokens, ms: now() - t0, arrivals };
}

const pct = (v, q) => { const s = [...v].sort((a, b) => a - b); return s[Math.max(1, Math.ceil(q * s.length)) - 1]; };
const user = (i) => [{ role: 'user', content: `Request ${i}: write a long story about a lighthouse keeper.` }];
const out = { model, streams: [] };
const ttfts = [];
for (const n of [1, 4, 8]) {
  await Promise.all([...Array(n)].map((_, i) => stream(base, user(1000 + i), 8))); // warm
  const t0 = now();
  const rs = await Promise.all([...Array(n)].map((_, i) => stream(base, user(i), 64)));
  const wall = (now() - t0) / 1000, tokens = rs.reduce((a, r) => a + r.tokens, 0);
  rs.forEach((r) => ttfts.push(r.ttft));
  // decode alone: each stream's tokens after its first over the time after
  // its first, summed (the wall-clock rate above also holds the prefills)
  const decode = rs.reduce((a, r) => a + (r.tokens - 1) / ((r.ms - r.ttft) / 1000), 0);
  // steady state: while every stream is decoding (from the last stream's
  // first token to the first stream's last), deltas of all of them per second
  const from = Math.max(...rs.map((r) => r.arrivals[0])), to = Math.min(...rs.map((r) => r.arrivals.at(-1)));
  const inside = rs.reduce((a, r) => a + r.arrivals.filter((t) => t > from && t <= to).length, 0);
  out.streams.push({ concurrent: n, tokens, wall_s: +wall.toFixed(3), aggregate_tok_s: +(tokens / wall).toFixed(2),
                     aggregate_decode_tok_s: +decode.toFixed(2),
                     steady_decode_tok_s: to > from ? +(inside / ((to - from) / 1000)).toFixed(2) : null });
}
out.batch_speedup_8 = +(out.streams[2].aggregate_tok_s / out.streams[0].aggregate_tok_s).toFixed(2);
out.decode_batch_speedup_8 =
  +(out.streams[2].aggregate_decode_tok_s / out.streams[0].aggregate_decode_tok_s).toFixed(2);
out.steady_batch_speedup_8 =
  +(out.streams[2].steady_decode_tok_s / out.streams[0].steady_decode_tok_s).toFixed(2);
out.ttft_ms = { p50: +pct(ttfts, 0.5).toFixed(1), p99: +pct(ttfts, 0.99).toFixed(1) };

// A ~2k-token agent prompt (a long system message of tool descriptions), one
// turn, then the second turn that resends it all plus one new message.
const tools = [...Array(26)].map((_, i) =>
  `Tool ${i}: fetch_record_${i}(id: string, fields: list of strings) returns the record's fields as JSON.`).join('\n');
async function secondTurn(url) {
  const msgs = [{ role: 'system', content: 'You are an agent with these tools:\n' + tools },
                { role: 'user', content: 'Look up record 7.' }];
  const first = await stream(url, msgs, 8);
  msgs.push({ role: 'assistant', content: 'Record 7 has the fields you asked for.' },
            { role: 'user', content: 'Now record 8, please.' });
  const second = await stream(url, msgs, 8);
  return { first_turn_ttft_ms: +first.ttft.toFixed(1), second_turn_ttft_ms: +second.ttft.toFixed(1) };
}
out.agent_prefix_reuse = await secondTurn(base);
if (baseNoCache) {
  out.agent_no_reuse = await secondTurn(baseNoCache);
  out.second_turn_speedup = +(out.agent_no_reuse.second_turn_ttft_ms /
                              out.agent_prefix_reuse.second_turn_ttft_ms).toFixed(1);
}
console.log(JSON.stringify(out));
