// A soak of one `ember serve --tts` under mixed load: plain chat, streamed
// chat, streamed speech and clients that leave mid-reply, from about twice as
// many concurrent clients as the server admits, for a bounded time. Only the
// OpenAI API is used (plus /capabilities when the server has it), so the same
// client runs against any OpenAI-compatible server. Loopback only.
//   node bench/soak.mjs --base http://127.0.0.1:PORT --seconds 600 [--pid PID]
//        [--clients N] [--speech-frames 25] [--max-tokens 96]
// Prints one JSON object: requests by status (only 200 and 503 with
// Retry-After are acceptable), RSS at start (after the warm-up, the first
// tenth), middle and end (from /proc/PID/status), and p50/p99 of the time to
// first token and first audio.
import { readFileSync } from 'node:fs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) =>
  (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const base = args.base;
const seconds = Number(args.seconds || 60);
const pid = args.pid ? Number(args.pid) : 0;
const speechFrames = Number(args['speech-frames'] || 25);
const maxTokens = Number(args['max-tokens'] || 96);
if (!base || !/^http:\/\/(127\.0\.0\.1|localhost|\[::1\]):\d+$/.test(base))
  throw new Error('--base must be a loopback http://127.0.0.1:PORT');
if (!(seconds > 0 && seconds <= 7200)) throw new Error('--seconds must be in (0, 7200]');

const caps = await fetch(base + '/capabilities').then((r) => (r.ok ? r.json() : null)).catch(() => null);
const model = args.model || (caps ? caps.model : (await (await fetch(base + '/v1/models')).json()).data[0].id);
const speech = caps ? caps.speech : null;
const clients = Number(args.clients || 2 * ((caps && caps.max_seqs) || 8));

const prompts = ['Tell me a joke.', "How's it going?", 'What can you do?', 'Tell me a story.',
                 'What is the weather in Paris?', 'Set a timer for ten minutes for tea.'];
const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Get the current weather in a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
const pick = (a) => a[Math.floor(Math.random() * a.length)];

const statuses = {};
const problems = [];
const ttft = [], ttfa = [];
function count(kind, res) {
  const key = res === null ? 'network_error' : String(res.status);
  statuses[key] = (statuses[key] || 0) + 1;
  if (res && res.status === 503 && !res.headers.get('retry-after')) problems.push(kind + ': 503 without Retry-After');
  if (res && res.status !== 200 && res.status !== 503) problems.push(`${kind}: HTTP ${res.status}`);
}

function chatBody(stream) {
  const body = { model, messages: [{ role: 'user', content: pick(prompts) }], max_tokens: maxTokens, stream };
  if (Math.random() < 0.3) body.tools = tools;
  if (Math.random() < 0.5) { body.temperature = 0.8; body.seed = Math.floor(Math.random() * 1e6); }
  return body;
}

async function post(path, body, signal) {
  return fetch(base + path, { method: 'POST', headers: { 'Content-Type': 'application/json' },
                              body: JSON.stringify(body), signal });
}

// Reads a streamed body; `leave` > 0: aborts after that many ms from the
// first byte (a client that goes away). Returns ms to the first byte or null.
async function drain(res, controller, leave) {
  const t0 = performance.now();
  const reader = res.body.getReader();
  let first = null;
  for (;;) {
    let chunk;
    try { chunk = await reader.read(); } catch (e) { if (e.name === 'AbortError') break; throw e; }
    if (chunk.done) break;
    if (first === null && chunk.value.length) {
      first = performance.now() - t0;
      if (leave) setTimeout(() => controller.abort(), leave);
    }
  }
  return first;
}

const ops = {
  async chat() {
    const res = await post('/v1/chat/completions', chatBody(false));
    count('chat', res);
    await res.arrayBuffer();
  },
  async stream(leave = 0) {
    const controller = new AbortController();
    const t0 = performance.now();
    const res = await post('/v1/chat/completions', chatBody(true), controller.signal);
    count(leave ? 'stream_leave' : 'stream', res);
    if (res.status !== 200) return res.arrayBuffer();
    const tHead = performance.now() - t0;
    const first = await drain(res, controller, leave);
    if (first !== null && !leave) ttft.push(tHead + first);
  },
  async speech(leave = 0) {
    if (!speech) return ops.stream(leave);
    const controller = new AbortController();
    const t0 = performance.now();
    const res = await post('/v1/audio/speech', { model: speech.model, input: pick(prompts), voice: pick(speech.voices),
                                                 response_format: 'pcm', stream: true, max_frames: speechFrames },
                           controller.signal);
    count(leave ? 'speech_leave' : 'speech', res);
    if (res.status !== 200) return res.arrayBuffer();
    const tHead = performance.now() - t0;
    const first = await drain(res, controller, leave);
    if (first !== null && !leave) ttfa.push(tHead + first);
  },
};

// The mix: a quarter each of plain chat, streamed chat, speech, and a client
// that leaves (a stream or speech dropped a little after its first bytes).
async function client(end) {
  while (performance.now() < end) {
    const r = Math.random();
    const [name, run] = r < 0.25 ? ['chat', () => ops.chat()]
      : r < 0.5 ? ['stream', () => ops.stream()]
      : r < 0.75 ? ['speech', () => ops.speech()]
      : r < 0.875 ? ['stream_leave', () => ops.stream(1 + Math.random() * 50)]
      : ['speech_leave', () => ops.speech(1 + Math.random() * 50)];
    try {
      await run();
    } catch (e) {
      if (e.name !== 'AbortError') {
        count(name, null);
        problems.push(`${name}: ${e.message || e}` + (e.cause ? `: ${e.cause.code || e.cause.message || e.cause}` : ''));
      }
    }
    // a 503 says Retry-After: 1; clients here come back a little sooner
    if (statuses['503']) await new Promise((r2) => setTimeout(r2, Math.random() * 200));
  }
}

function rssKiB() {
  if (!pid) return null;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch { return null; }
}
// The bytes the prefix cache holds (ember's /metrics; null elsewhere): it
// fills up to its cap by design, which RSS shows too.
async function cacheBytes() {
  try {
    const text = await (await fetch(base + '/metrics')).text();
    const m = /^ember_prefix_cache_bytes (\S+)$/m.exec(text);
    return m ? Number(m[1]) : null;
  } catch { return null; }
}

const rss = [];
const t0 = performance.now(), end = t0 + seconds * 1000;
async function sample() {
  rss.push({ t: (performance.now() - t0) / 1000, kib: rssKiB(), cache: await cacheBytes() });
}
const sampler = setInterval(sample, 1000);
await sample();
await Promise.all(Array.from({ length: clients }, () => client(end)));
clearInterval(sampler);
await sample();

const pct = (a, p) => {
  if (!a.length) return null;
  const s = [...a].sort((x, y) => x - y);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]);
};
// RSS at the end of the warm-up (a tenth of the run), the middle and the end
const at = (t) => rss.reduce((best, x) => (Math.abs(x.t - t) < Math.abs(best.t - t) ? x : best), rss[0]);
const start = at(seconds / 10), mid = at(seconds / 2), last = rss[rss.length - 1];
const rssStart = start.kib, rssMid = mid.kib, rssEnd = last.kib;
const mib = (b) => (b === null ? null : +(b / 1048576).toFixed(1));
const total = Object.values(statuses).reduce((a, b) => a + b, 0);
const report = {
  base, model, speech_model: speech ? speech.model : null, seconds, clients,
  requests: total, by_status: statuses,
  bad: problems.length, bad_examples: [...new Set(problems)].slice(0, 5),
  rss_mib: pid ? { start: +(rssStart / 1024).toFixed(1), middle: +(rssMid / 1024).toFixed(1),
                   end: +(rssEnd / 1024).toFixed(1), drift_pct: +((100 * (rssEnd - rssStart)) / rssStart).toFixed(2) } : null,
  prefix_cache_mib: { start: mib(start.cache), middle: mib(mid.cache), end: mib(last.cache) },
  // RSS and the prefix cache at each tenth of the run, to see where it levels off
  timeline_mib: pid ? Array.from({ length: 11 }, (_, k) => at((k * seconds) / 10))
    .map((x) => [Math.round(x.t), +(x.kib / 1024).toFixed(1), mib(x.cache)]) : null,
  ttft_ms: { n: ttft.length, p50: pct(ttft, 50), p99: pct(ttft, 99) },
  ttfa_ms: { n: ttfa.length, p50: pct(ttfa, 50), p99: pct(ttfa, 99) },
};
console.log(JSON.stringify(report));
process.exit(report.bad ? 1 : 0);
