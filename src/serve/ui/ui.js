// ember's built-in page: chat, tools and speech against this server's own
// OpenAI-compatible endpoints. Plain DOM, no framework, no network beyond
// this origin. Served under a Content-Security-Policy with no inline code:
// everything is wired here, and text only ever goes in through textContent.
'use strict';

const $ = (id) => document.getElementById(id);
const KEY_STORE = 'ember.apiKey';
const SETTINGS_STORE = 'ember.settings';

const state = {
  caps: null,              // GET /capabilities
  key: localStorage.getItem(KEY_STORE) || '',
  messages: [],            // the conversation, OpenAI-shaped plus UI fields
  busy: null,              // {controller, msg} while a reply streams
  editing: -1,             // index of the message being edited
  audio: null,             // the AudioContext, made on the first speak
  speaking: null,          // {controller, msg, sources} while speech plays
  keyPrompt: null,         // the pending API key dialog's promise
};

const EXAMPLE_TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'Get the current weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
  { type: 'function', function: { name: 'set_timer', description: 'Start a countdown timer.',
    parameters: { type: 'object', properties: { minutes: { type: 'integer' }, label: { type: 'string' } },
                  required: ['minutes'] } } },
];

// ---- the server ----------------------------------------------------------

// fetch with the API key; a 401 asks for the key (once for all callers) and
// tries again with it.
async function api(path, { json, signal } = {}) {
  for (;;) {
    const headers = {};
    if (state.key) headers.Authorization = 'Bearer ' + state.key;
    const init = { method: 'GET', headers, signal };
    if (json !== undefined) {
      init.method = 'POST';
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(json);
    }
    const res = await fetch(path, init);
    if (res.status !== 401) return res;
    if (!(await askKey(Boolean(state.key)))) return res;
  }
}

function askKey(refused) {
  if (!state.keyPrompt) {
    state.keyPrompt = new Promise((resolve) => {
      const dialog = $('key-dialog');
      $('key-error').hidden = !refused;
      $('key').value = '';
      dialog.addEventListener('close', () => {
        const key = $('key').value.trim();
        state.keyPrompt = null;
        if (dialog.returnValue === 'cancel' || !key) return resolve(false);
        state.key = key;
        localStorage.setItem(KEY_STORE, key);
        $('forget-key').hidden = false;
        resolve(true);
      }, { once: true });
      dialog.returnValue = '';
      dialog.showModal();
    });
  }
  return state.keyPrompt;
}

async function errorText(res) {
  const text = await res.text();
  try { return JSON.parse(text).error.message; } catch { return `HTTP ${res.status}: ${text.slice(0, 200)}`; }
}

// Calls onEvent with each `data:` JSON of a server-sent event stream.
async function readEvents(res, onEvent) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, end);
      buf = buf.slice(end + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data: ')) continue;
        const data = line.slice(6);
        if (data === '[DONE]') return;
        onEvent(JSON.parse(data));
      }
    }
  }
}

async function loadCapabilities() {
  let res;
  try { res = await api('/capabilities'); } catch {
    showModel('server unreachable, retrying…', true);
    return new Promise((resolve) => setTimeout(() => resolve(loadCapabilities()), 3000));
  }
  if (!res.ok) return showModel(res.status === 401 ? 'API key needed' : await errorText(res), true);
  const caps = state.caps = await res.json();
  showModel(caps.model + (caps.speech ? ' · speech: ' + caps.speech.model : ''));
  $('empty-model').textContent = caps.model;
  $('forget-key').hidden = !state.key;
  $('temperature').placeholder = String(caps.sampling.temperature);
  $('top_p').placeholder = String(caps.sampling.top_p);
  $('max_tokens').placeholder = 'up to ' + caps.max_model_len;
  $('speech').hidden = !caps.speech;
  if (caps.speech) {
    fillSelect($('voice'), caps.speech.voices);
    fillSelect($('language'), ['auto', ...caps.speech.languages]);
  }
  loadSettings();
  document.body.dataset.ready = '1';
  render();
}

function showModel(text, bad) {
  $('model').textContent = text;
  $('model').classList.toggle('error', Boolean(bad));
}

function fillSelect(select, names) {
  select.replaceChildren(...names.map((n) => new Option(n.replace(/_/g, ' '), n)));
}

// ---- settings, kept in this browser -----------------------------------------

const SETTING_IDS = ['system', 'temperature', 'top_p', 'max_tokens', 'seed', 'tools', 'voice', 'language',
                     'max_seconds', 'autospeak'];

function saveSettings() {
  const s = {};
  for (const id of SETTING_IDS) s[id] = $(id).type === 'checkbox' ? $(id).checked : $(id).value;
  localStorage.setItem(SETTINGS_STORE, JSON.stringify(s));
}

function loadSettings() {
  let s = {};
  try { s = JSON.parse(localStorage.getItem(SETTINGS_STORE) || '{}'); } catch { /* start afresh */ }
  for (const id of SETTING_IDS) {
    if (!(id in s)) continue;
    if ($(id).type === 'checkbox') $(id).checked = Boolean(s[id]);
    else if ($(id).tagName !== 'SELECT' || [...$(id).options].some((o) => o.value === s[id])) $(id).value = s[id];
  }
  checkTools();
}

// The tool definitions: [] when empty, null when not valid. A bare
// {name, parameters} is taken as a function.
function parseTools() {
  const text = $('tools').value.trim();
  if (!text) return [];
  try {
    const list = JSON.parse(text);
    if (!Array.isArray(list)) return null;
    const tools = list.map((t) => (t && t.function ? t : { type: 'function', function: t }));
    return tools.every((t) => t.function && typeof t.function.name === 'string') ? tools : null;
  } catch { return null; }
}

function checkTools() {
  const tools = parseTools(), tag = $('tools-state');
  tag.textContent = tools === null ? 'not valid JSON' : tools.length ? tools.length + ' defined' : '';
  tag.className = 'tag ' + (tools === null ? 'bad' : 'ok');
}

function number(id) {
  const v = $(id).value.trim();
  return v === '' ? undefined : Number(v);
}

// ---- the conversation ------------------------------------------------------

// The messages as the API takes them (UI-only fields dropped).
function apiMessages() {
  const out = [];
  const system = $('system').value.trim();
  if (system) out.push({ role: 'system', content: system });
  for (const m of state.messages) {
    if (m.role === 'assistant') {
      if (!m.content && !m.tool_calls.length) continue;  // an empty or failed reply
      const a = { role: 'assistant', content: m.content };
      if (m.tool_calls.length) a.tool_calls = m.tool_calls.map(({ id, type, function: f }) => ({ id, type, function: f }));
      out.push(a);
    } else if (m.role === 'tool') {
      out.push({ role: 'tool', tool_call_id: m.tool_call_id, content: m.content });
    } else {
      out.push({ role: m.role, content: m.content });
    }
  }
  return out;
}

async function generate() {
  const tools = parseTools();
  if (tools === null) return flash('The tool definitions are not valid JSON.');
  const body = { model: state.caps.model, messages: apiMessages(), stream: true,
                 stream_options: { include_usage: true } };
  for (const k of ['temperature', 'top_p', 'max_tokens', 'seed']) if (number(k) !== undefined) body[k] = number(k);
  if (tools.length) body.tools = tools;

  const msg = { role: 'assistant', content: '', reasoning: '', tool_calls: [], stats: null };
  state.messages.push(msg);
  const controller = new AbortController();
  state.busy = { controller, msg };
  render();
  const t0 = performance.now();
  let tFirst = 0, deltas = 0, usage = null, finish = null;
  try {
    const res = await api('/v1/chat/completions', { json: body, signal: controller.signal });
    if (!res.ok) throw new Error(await errorText(res));
    await readEvents(res, (o) => {
      if (o.error) throw new Error(o.error.message);
      if (o.usage) usage = o.usage;
      const choice = o.choices && o.choices[0];
      if (!choice) return;
      const d = choice.delta || {};
      if (d.content || d.reasoning_content || d.tool_calls) {
        if (!tFirst) tFirst = performance.now();
        deltas++;
      }
      if (d.content) msg.content += d.content;
      if (d.reasoning_content) msg.reasoning += d.reasoning_content;
      for (const c of d.tool_calls || []) {
        const have = msg.tool_calls[c.index];
        if (have) have.function.arguments += c.function.arguments || '';
        else msg.tool_calls[c.index] = { id: c.id, type: 'function',
                                         function: { name: c.function.name, arguments: c.function.arguments || '' } };
      }
      if (choice.finish_reason) finish = choice.finish_reason;
      updateStreaming(msg);
    });
  } catch (e) {
    if (e.name === 'AbortError') finish = 'stopped';
    else msg.error = e.message || String(e);
  }
  const tEnd = performance.now();
  const tokens = usage ? usage.completion_tokens : deltas;
  msg.stats = {
    ttft: tFirst ? tFirst - t0 : null,
    tokens, exact: Boolean(usage),
    tps: tFirst && tokens > 1 && tEnd > tFirst ? (tokens - 1) / ((tEnd - tFirst) / 1000) : null,
    finish,
  };
  state.busy = null;
  render();
  if ($('autospeak').checked && state.caps.speech && msg.content && !msg.error && finish !== 'stopped') speak(msg);
}

function stop() {
  if (state.busy) state.busy.controller.abort();
}

function send(text) {
  if (state.busy || !state.caps) return;
  state.messages.push({ role: 'user', content: text });
  generate();
}

// Drops message i and everything after it, then answers again.
function regenerate(i) {
  if (state.busy) return;
  stopSpeaking();
  state.messages.length = i;
  generate();
}

// The tool result for one call: a tool message after the call's reply (and
// its other results); once every call has one, the model goes on.
function returnResult(i, call, text) {
  if (state.busy) return;
  const at = i + 1 + pendingCalls(i).answered;
  state.messages.splice(at, 0, { role: 'tool', tool_call_id: call.id, name: call.function.name, content: text });
  if (pendingCalls(i).left.length === 0) generate();
  else render();
}

// The calls of reply i that have a result (answered) and those that have not.
function pendingCalls(i) {
  const ids = new Set();
  let j = i + 1;
  for (; j < state.messages.length && state.messages[j].role === 'tool'; j++) ids.add(state.messages[j].tool_call_id);
  const left = state.messages[i].tool_calls.filter((c) => !ids.has(c.id));
  return { left, answered: ids.size, last: j === state.messages.length };
}

function flash(text) {
  showModel(text, true);
  setTimeout(() => state.caps && showModel(state.caps.model), 4000);
}

// ---- rendering -----------------------------------------------------------

function button(label, onClick, cls) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = label;
  if (cls) b.className = cls;
  b.addEventListener('click', onClick);
  return b;
}

function render() {
  const log = $('log');
  log.replaceChildren($('empty'));
  $('empty').hidden = state.messages.length > 0;
  state.messages.forEach((m, i) => log.append(messageElement(m, i)));
  const busy = Boolean(state.busy);
  $('send').hidden = busy;
  $('stop').hidden = !busy;
  log.scrollTop = log.scrollHeight;
}

// Redraws one message (its Speak button, say), leaving the others and
// whatever is being typed in them alone.
function rerender(m) {
  const i = state.messages.indexOf(m);
  if (i >= 0 && m.el && state.editing !== i) m.el.replaceWith(messageElement(m, i));
}

function messageElement(m, i) {
  const el = $('msg-template').content.firstElementChild.cloneNode(true);
  m.el = el;
  el.classList.add(m.role);
  el.dataset.role = m.role;
  el.dataset.index = String(i);
  const streaming = state.busy && state.busy.msg === m;
  el.classList.toggle('streaming', Boolean(streaming));
  if (m.role === 'assistant' && !streaming) el.dataset.done = m.stats ? m.stats.finish || 'done' : 'done';
  el.querySelector('.who').textContent =
    m.role === 'user' ? 'You' : m.role === 'tool' ? 'Tool result · ' + m.name : (state.caps ? state.caps.model : 'assistant');

  const actions = el.querySelector('.actions');
  if (state.editing === i) {
    const box = document.createElement('textarea');
    box.className = 'edit-box';
    box.value = m.content;
    el.querySelector('.text').replaceWith(box);
    const label = m.role === 'user' ? 'Save & regenerate' : 'Save';
    actions.append(button(label, () => saveEdit(i, box.value), 'primary small'),
                   button('Cancel', () => { state.editing = -1; render(); }));
    setTimeout(() => box.focus(), 0);
  } else {
    fillMessage(m, el);
    if (!state.busy) {
      if (m.role !== 'tool') actions.append(button('Edit', () => { state.editing = i; render(); }));
      if (m.role === 'assistant') actions.append(button('Regenerate', () => regenerate(i)));
      if (m.role === 'assistant' && state.caps.speech && m.content) {
        const speakingThis = state.speaking && state.speaking.msg === m;
        actions.append(button(speakingThis ? 'Stop audio' : 'Speak',
                              () => (speakingThis ? stopSpeaking() : speak(m)), 'speak' + (speakingThis ? ' on' : '')));
      }
    }
  }
  return el;
}

// The parts of a message that change while it streams.
function fillMessage(m, el) {
  // models put blank lines around their reasoning: not shown
  el.querySelector('.text').textContent = m.role === 'assistant' ? m.content.trimStart() : m.content;
  const reasoning = (m.reasoning || '').trim();
  el.querySelector('.reasoning').hidden = !reasoning;
  el.querySelector('.reasoning-text').textContent = reasoning;
  if (m.role === 'assistant') renderCalls(m, el);
  let err = el.querySelector('.error');
  if (m.error && !err) {
    err = document.createElement('div');
    err.className = 'error';
    el.querySelector('.calls').after(err);
  }
  if (err) err.textContent = m.error || '';
  el.querySelector('.stats').textContent = statsText(m);
  if (m.audioStats) {
    el.dataset.audioChunks = String(m.audioStats.chunks);
    el.dataset.audioPlayed = String(m.audioStats.played);
    el.dataset.audioBytes = String(m.audioStats.bytes);
  }
}

function updateStreaming(m) {
  const log = $('log');
  const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 80;
  if (m.el) fillMessage(m, m.el);
  if (atBottom) log.scrollTop = log.scrollHeight;
}

function renderCalls(m, el) {
  const box = el.querySelector('.calls');
  box.replaceChildren();
  const i = state.messages.indexOf(m);
  const pending = i >= 0 && !(state.busy && state.busy.msg === m) ? pendingCalls(i) : null;
  for (const call of m.tool_calls) {
    const card = document.createElement('div');
    card.className = 'call';
    const head = document.createElement('div');
    head.className = 'call-head';
    const name = document.createElement('span');
    name.className = 'name';
    name.textContent = call.function.name;
    const id = document.createElement('span');
    id.className = 'id';
    id.textContent = call.id || '';
    const badge = document.createElement('span');
    badge.className = 'fn';
    badge.textContent = 'call';
    head.append(badge, name, id);
    const args = document.createElement('pre');
    args.textContent = prettyJSON(call.function.arguments);
    card.append(head, args);
    const waiting = pending && pending.last && pending.left.includes(call);
    if (waiting && !state.busy) {
      const form = document.createElement('div');
      form.className = 'result';
      const input = document.createElement('textarea');
      input.placeholder = 'Result of ' + call.function.name + ' (e.g. JSON), sent as a tool message';
      input.rows = 1;
      const go = button('Send result', () => input.value.trim() && returnResult(i, call, input.value.trim()), 'primary small');
      input.addEventListener('keydown', (e) => {
        if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); go.click(); }
      });
      form.append(input, go);
      card.append(form);
    } else if (pending && !waiting && !pending.left.includes(call)) {
      const note = document.createElement('div');
      note.className = 'answered';
      note.textContent = 'result returned';
      card.append(note);
    }
    box.append(card);
  }
}

function prettyJSON(text) {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return text; }
}

function statsText(m) {
  const parts = [];
  const s = m.stats;
  if (s) {
    if (s.ttft !== null) parts.push('first token ' + Math.round(s.ttft) + ' ms');
    if (s.tps !== null) parts.push(s.tps.toFixed(1) + ' tok/s');
    if (s.tokens) parts.push((s.exact ? '' : '≈') + s.tokens + ' tokens');
    if (s.finish && s.finish !== 'stop') parts.push(s.finish === 'tool_calls' ? 'tool call' : s.finish);
  }
  const a = m.audioStats;
  if (a) {
    if (a.error) parts.push('speech: ' + a.error);
    else if (a.ttfa !== null) parts.push('first audio ' + Math.round(a.ttfa) + ' ms · ' +
                                         (a.bytes / 2 / state.caps.speech.sample_rate).toFixed(1) + ' s of audio');
    else parts.push('speech: waiting…');
  }
  return parts.join(' · ');
}

function saveEdit(i, text) {
  const m = state.messages[i];
  state.editing = -1;
  m.content = text;
  if (m.role === 'user') regenerate(i + 1);
  else render();
}

// ---- speech ----------------------------------------------------------------

// The longest prefix of text that fits in max bytes of UTF-8.
function clipUtf8(text, max) {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= max) return text;
  return new TextDecoder().decode(bytes.slice(0, max)).replace(/\uFFFD+$/, '');
}

// Streams the reply's text as raw 16-bit PCM and plays each piece through
// Web Audio as it arrives, one after the other.
async function speak(m) {
  stopSpeaking();
  const sp = state.caps.speech;
  const ctx = state.audio || (state.audio = new AudioContext());
  if (ctx.state === 'suspended') ctx.resume();  // not awaited: a page without a gesture stays suspended
  const controller = new AbortController();
  const speaking = state.speaking = { controller, msg: m, sources: new Set() };
  const stats = m.audioStats = { chunks: 0, played: 0, bytes: 0, ttfa: null, error: null };
  const body = { model: sp.model, input: clipUtf8(m.content, sp.max_input_bytes), voice: $('voice').value,
                 response_format: 'pcm', stream: true };
  if ($('language').value !== 'auto') body.language = $('language').value;
  const seconds = number('max_seconds');
  if (seconds) body.max_frames = Math.max(1, Math.min(sp.max_frames, Math.round(seconds * 1000 / sp.frame_ms)));
  rerender(m);
  const t0 = performance.now();
  let next = 0, carry = null;
  try {
    const res = await api('/v1/audio/speech', { json: body, signal: controller.signal });
    if (!res.ok) throw new Error(await errorText(res));
    const reader = res.body.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      let bytes = value;
      if (carry) { bytes = new Uint8Array(carry.length + value.length); bytes.set(carry); bytes.set(value, carry.length); }
      const n = bytes.length >> 1;
      carry = bytes.length & 1 ? bytes.slice(bytes.length - 1) : null;
      if (!n) continue;
      if (stats.ttfa === null) stats.ttfa = performance.now() - t0;
      const view = new DataView(bytes.buffer, bytes.byteOffset, n * 2);
      const samples = new Float32Array(n);
      for (let k = 0; k < n; k++) samples[k] = view.getInt16(2 * k, true) / 32768;
      const buffer = ctx.createBuffer(1, n, sp.sample_rate);
      buffer.copyToChannel(samples, 0);
      const src = ctx.createBufferSource();
      src.buffer = buffer;
      src.connect(ctx.destination);
      const at = Math.max(ctx.currentTime + 0.05, next);
      src.onended = () => { speaking.sources.delete(src); stats.played++; fillMessage(m, m.el); };
      src.start(at);
      speaking.sources.add(src);
      next = at + buffer.duration;
      stats.chunks++;
      stats.bytes += n * 2;
      fillMessage(m, m.el);
    }
  } catch (e) {
    if (e.name !== 'AbortError') stats.error = e.message || String(e);
  }
  fillMessage(m, m.el);
  // the button goes back to Speak once the last piece has played
  const left = Math.max(0, next - ctx.currentTime);
  setTimeout(() => { if (state.speaking === speaking) { state.speaking = null; rerender(m); } }, left * 1000);
}

function stopSpeaking() {
  const sp = state.speaking;
  if (!sp) return;
  state.speaking = null;
  sp.controller.abort();
  for (const src of sp.sources) { try { src.stop(); } catch { /* already ended */ } }
  rerender(sp.msg);
}

// ---- the metrics panel ---------------------------------------------------

async function pollMetrics() {
  if (!document.hidden && state.caps) {
    try {
      const res = await api('/metrics');
      if (res.ok) showMetrics(await res.text());
      $('metrics-state').textContent = res.ok ? 'live' : 'HTTP ' + res.status;
      $('metrics-state').className = 'tag ' + (res.ok ? 'ok' : 'bad');
    } catch {
      $('metrics-state').textContent = 'unreachable';
      $('metrics-state').className = 'tag bad';
    }
  }
  setTimeout(pollMetrics, 2000);
}

function showMetrics(text) {
  const v = {};
  let requests = 0, rejected = 0;
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    const [name, value] = line.split(' ');
    v[name] = Number(value);
    if (name.startsWith('ember_requests_total{')) {
      requests += Number(value);
      if (name.includes('"503"')) rejected += Number(value);
    }
  }
  const mean = (h) => (v[h + '_count'] ? Math.round((1000 * v[h + '_sum']) / v[h + '_count']) + ' ms' : '–');
  const mib = (b) => (b / 1048576).toFixed(1) + ' MiB';
  const rows = [
    ['active sequences', `${v.ember_active_sequences ?? 0} / ${state.caps.max_seqs}`, 'active'],
    ['queued', v.ember_queue_depth ?? 0, 'queued'],
    ['requests', requests + (rejected ? ` (${rejected} busy)` : ''), 'requests'],
    ['cancelled', v.ember_cancelled_total ?? 0, 'cancelled'],
    ['generated tokens', v.ember_completion_tokens_total ?? 0, 'tokens'],
    ['mean first token', mean('ember_time_to_first_token_seconds'), 'ttft'],
    ['KV cache', `${mib(v.ember_kv_bytes_in_use ?? 0)} / ${mib(v.ember_kv_bytes_budget ?? 0)}`, 'kv'],
    ['prefix cache hits', v.ember_prefix_cache_hits_total ?? 0, 'prefix'],
  ];
  if (state.caps.speech) rows.push(['mean first audio', mean('ember_time_to_first_audio_seconds'), 'ttfa']);
  $('metrics').replaceChildren(...rows.flatMap(([label, value, key]) => {
    const dt = document.createElement('dt'), dd = document.createElement('dd');
    dt.textContent = label;
    dd.textContent = String(value);
    dd.dataset.metric = key;
    return [dt, dd];
  }));
}

// ---- wiring ----------------------------------------------------------------

function wire() {
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const text = $('input').value.trim();
    if (!text || state.busy || !state.caps) return;
    $('input').value = '';
    autosize();
    send(text);
  });
  $('input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); $('composer').requestSubmit(); }
  });
  $('input').addEventListener('input', autosize);
  $('stop').addEventListener('click', stop);
  $('new-chat').addEventListener('click', () => {
    stop();
    stopSpeaking();
    state.messages = [];
    state.editing = -1;
    render();
  });
  $('toggle-side').addEventListener('click', () => {
    const narrow = window.matchMedia('(max-width: 860px)').matches;
    document.body.classList.toggle(narrow ? 'side-open' : 'side-closed');
  });
  $('tools').addEventListener('input', checkTools);
  $('tools-example').addEventListener('click', () => {
    $('tools').value = JSON.stringify(EXAMPLE_TOOLS, null, 2);
    checkTools();
    saveSettings();
  });
  $('tools-clear').addEventListener('click', () => { $('tools').value = ''; checkTools(); saveSettings(); });
  for (const id of SETTING_IDS) $(id).addEventListener('change', saveSettings);
  $('forget-key').addEventListener('click', () => {
    localStorage.removeItem(KEY_STORE);
    state.key = '';
    $('forget-key').hidden = true;
  });
  $('key-dialog').addEventListener('cancel', () => { $('key-dialog').returnValue = 'cancel'; });
}

function autosize() {
  const input = $('input');
  input.style.height = 'auto';
  input.style.height = Math.min(input.scrollHeight + 2, window.innerHeight * 0.4) + 'px';
}

wire();
loadCapabilities().then(pollMetrics);
