// ember serve's built-in page in a real browser: Debian's chromium driven
// over the DevTools protocol by puppeteer-core. Prints a PASS or FAIL line
// per check (tests/e2e/ui.sh starts the servers).
//   node ui.mjs NODE_MODULES BASE KEYED_BASE KEY SHOTS_DIR
// BASE: a server of models/demo with --tts; KEYED_BASE: one with --api-key KEY.
// SHOTS_DIR: where the screenshots go ("" for none).
const [nm, base, keyedBase, key, shots] = process.argv.slice(2);
const { default: puppeteer } = await import(nm + '/puppeteer-core/lib/esm/puppeteer/puppeteer-core.js');

let failed = 0;
function check(name, ok, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}`);
  if (!ok) { failed = 1; if (detail !== undefined) console.log('     ' + String(detail).slice(0, 600)); }
  return ok;
}
async function attempt(name, fn) {
  try { await fn(); } catch (e) { check(name, false, e && e.stack ? e.stack : e); }
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The server's metrics as {name: value}.
async function metrics(url) {
  const text = await (await fetch(url + '/metrics')).text();
  const v = {};
  for (const line of text.split('\n')) if (line && line[0] !== '#') { const [k, x] = line.split(' '); v[k] = Number(x); }
  return v;
}
async function until(what, fn, ms = 20000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting for ' + what);
    await sleep(50);
  }
}

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--autoplay-policy=no-user-gesture-required', '--mute-audio',
         '--no-first-run', '--disable-extensions', '--disable-background-networking'],
});

// A fresh profile per page (its own localStorage), with every console error,
// page error and failed request collected.
async function openPage(url) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport({ width: 1180, height: 760 });
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('requestfailed', (r) => {
    const why = r.failure() ? r.failure().errorText : '';
    if (why !== 'net::ERR_ABORTED') problems.push('request failed: ' + r.url() + ' ' + why);
  });
  const urls = [];
  page.on('request', (r) => urls.push(r.url()));
  const response = await page.goto(url, { waitUntil: 'load' });
  return { page, context, problems, urls, response };
}

const last = (page, sel) => page.evaluate((s) => {
  const all = document.querySelectorAll(s);
  const el = all[all.length - 1];
  return el ? { text: el.querySelector('.text') ? el.querySelector('.text').textContent : '', done: el.dataset.done,
                stats: el.querySelector('.stats') ? el.querySelector('.stats').textContent : '',
                chunks: Number(el.dataset.audioChunks || 0), played: Number(el.dataset.audioPlayed || 0),
                bytes: Number(el.dataset.audioBytes || 0), calls: el.querySelectorAll('.call').length } : null;
}, sel);

async function send(page, text) {
  await page.click('#input');
  await page.type('#input', text);
  await page.keyboard.press('Enter');
}

async function shot(page, name) {
  if (shots) await page.screenshot({ path: `${shots}/${name}`, type: 'png' });
}

const { page, problems, response } = await openPage(base + '/');

await attempt('ui_page_loads_with_csp', async () => {
  const csp = response.headers()['content-security-policy'] || '';
  await page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
  const types = await Promise.all(['/ui.js', '/ui.css'].map(async (p) => (await fetch(base + p)).headers.get('content-type')));
  check('ui_page_loads_with_csp', response.status() === 200 && /default-src 'self'/.test(csp) &&
        /script-src 'self'/.test(csp) && !/unsafe-(inline|eval)/.test(csp) &&
        types[0].startsWith('text/javascript') && types[1].startsWith('text/css'),
        `status ${response.status()} csp "${csp}" types ${types}`);
});

await attempt('ui_shows_capabilities', async () => {
  const got = await page.evaluate(() => ({ model: document.getElementById('model').textContent,
    speech: !document.getElementById('speech').hidden, voices: document.getElementById('voice').options.length }));
  check('ui_shows_capabilities', got.model.startsWith('demo') && got.speech && got.voices > 0, JSON.stringify(got));
});

// A reply streams: the text of the reply changes more than once before it is
// done, and the reply shows its time to first token and tokens/s.
await attempt('ui_chat_streams', async () => {
  await page.type('#system', 'You are a helpful assistant.');
  await page.evaluate(() => {
    window.__textChanges = 0;
    new MutationObserver((list) => {
      for (const m of list) if (m.target.closest && m.target.closest('.msg.assistant')) window.__textChanges++;
    }).observe(document.getElementById('log'), { subtree: true, childList: true, characterData: true });
  });
  await send(page, 'Tell me a joke.');
  await page.waitForSelector('.msg.assistant[data-done]', { timeout: 20000 });
  const r = await last(page, '.msg.assistant');
  const changes = await page.evaluate(() => window.__textChanges);
  check('ui_chat_streams', r.text.length > 10 && changes > 2 && /first token \d+ ms/.test(r.stats) && /tok\/s/.test(r.stats),
        JSON.stringify({ ...r, changes }));
});

// Tools: the definitions, a call rendered, its result returned as a tool
// message, and the model's answer after it. With this seed the demo model
// reasons first (shown folded) and then calls get_weather.
await attempt('ui_tool_call_renders', async () => {
  await page.click('#new-chat');
  await page.click('#tools-example');
  await page.type('#temperature', '0.7');
  await page.type('#seed', '1');
  await send(page, 'What is the weather in Paris?');
  await page.waitForSelector('.msg.assistant[data-done] .call', { timeout: 20000 });
  const call = await page.evaluate(() => ({
    name: document.querySelector('.call .name').textContent,
    args: document.querySelector('.call pre').textContent,
    field: Boolean(document.querySelector('.call .result textarea')),
    reasoning: document.querySelector('.msg.assistant .reasoning-text').textContent,
    folded: !document.querySelector('.msg.assistant .reasoning').hidden &&
            !document.querySelector('.msg.assistant .reasoning').open,
  }));
  let args = {};
  try { args = JSON.parse(call.args); } catch { /* reported below */ }
  check('ui_tool_call_renders', call.name === 'get_weather' && args.city === 'Paris' && call.field, JSON.stringify(call));
  check('ui_reasoning_folded', call.reasoning.length > 10 && call.folded, JSON.stringify(call));
});
await attempt('ui_tool_result_continues', async () => {
  await page.type('.call .result textarea', '{"city": "Paris", "temperature_c": 18, "sky": "sunny"}');
  await page.click('.call .result button');
  await page.waitForFunction(() => {
    const a = document.querySelectorAll('.msg.assistant');
    return a.length === 2 && a[1].dataset.done;
  }, { timeout: 20000 });
  const roles = await page.evaluate(() => [...document.querySelectorAll('.msg')].map((e) => e.dataset.role).join(','));
  const r = await last(page, '.msg.assistant');
  check('ui_tool_result_continues', roles === 'user,assistant,tool,assistant' && r.text.length > 0 && r.calls === 0,
        JSON.stringify({ roles, ...r }));
});

// Speech: Speak streams raw PCM and the page plays each chunk as it arrives.
await attempt('ui_speak_plays_chunks', async () => {
  await page.type('#max_seconds', '2');
  await page.evaluate(() => document.getElementById('max_seconds').dispatchEvent(new Event('change')));
  await page.evaluate(() => {
    const a = document.querySelectorAll('.msg.assistant');
    a[a.length - 1].querySelector('button.speak').click();
  });
  const r = await until('audio to play', async () => {
    const x = await last(page, '.msg.assistant');
    return x.played >= 1 && x.played === x.chunks && !/waiting/.test(x.stats) ? x : null;
  }, 30000);
  // 2 s at 24 kHz, 16-bit: 25 frames of 80 ms
  check('ui_speak_plays_chunks', r.chunks >= 1 && r.bytes === 25 * 3840 && /first audio \d+ ms/.test(r.stats),
        JSON.stringify(r));
  await page.evaluate(() => { document.querySelector('.msg.assistant .reasoning').open = true; });
  await shot(page, 'ui-tools.png');
  // back to the model's defaults
  await page.evaluate(() => { for (const id of ['temperature', 'seed']) document.getElementById(id).value = ''; });
});
await attempt('ui_autospeak', async () => {
  await page.click('#autospeak');
  await page.click('#tools-clear');
  await send(page, 'Tell me a joke.');
  const r = await until('auto-spoken reply', async () => {
    const x = await last(page, '.msg.assistant');
    return x && x.done && x.chunks >= 1 ? x : null;
  }, 30000);
  check('ui_autospeak', r.chunks >= 1, JSON.stringify(r));
  await page.click('#autospeak');
});

// Editing a user turn regenerates the reply after it.
await attempt('ui_edit_regenerates', async () => {
  await page.click('#new-chat');
  await send(page, 'What can you do?');
  await page.waitForSelector('.msg.assistant[data-done]', { timeout: 20000 });
  await page.evaluate(() => [...document.querySelector('.msg.user .actions').children].find((b) => b.textContent === 'Edit').click());
  await page.waitForSelector('.msg.user .edit-box');
  await page.evaluate(() => { document.querySelector('.msg.user .edit-box').value = 'Tell me a joke.'; });
  await page.evaluate(() => document.querySelector('.msg.user .actions button.primary').click());
  await page.waitForFunction(() => document.querySelectorAll('.msg').length === 2 &&
                             document.querySelector('.msg.assistant[data-done]'), { timeout: 20000 });
  const texts = await page.evaluate(() => [...document.querySelectorAll('.msg .text')].map((e) => e.textContent));
  check('ui_edit_regenerates', texts[0] === 'Tell me a joke.' && texts[1].length > 0, JSON.stringify(texts));
  await send(page, "How's it going?");
  await page.waitForFunction(() => document.querySelectorAll('.msg.assistant[data-done]').length === 2, { timeout: 20000 });
  await shot(page, 'ui-chat.png');
});

// Stop: the fetch is aborted and the server frees the row (/metrics). EOS
// is banned (logit_bias, added to the page's request by wrapping its fetch)
// so the reply would run for thousands of tokens.
await attempt('ui_stop_frees_row', async () => {
  await page.click('#new-chat');
  await page.evaluate(() => {
    window.__fetch = window.fetch;
    window.fetch = (url, init) => {
      if (String(url).endsWith('/v1/chat/completions')) {
        const body = JSON.parse(init.body);
        body.logit_bias = { 4599: -100, 4601: -100 };
        body.max_tokens = 3800;
        init = { ...init, body: JSON.stringify(body) };
      }
      return window.__fetch(url, init);
    };
  });
  const before = await metrics(base);
  await send(page, 'Tell me a story.');
  // anything streamed counts (a reply may open with a folded <think> block,
  // outside .text)
  await until('a streaming reply', async () => page.evaluate(() => {
    const all = document.querySelectorAll('.msg.assistant');
    const el = all[all.length - 1];
    return el && !el.dataset.done && el.textContent.length > 40 && !document.getElementById('stop').hidden;
  }));
  const during = await metrics(base);
  const clicked = await page.evaluate(() => {
    const stop = document.getElementById('stop');
    if (stop.hidden) return false;
    stop.click();
    return true;
  });
  const after = clicked ? await until('the row to be freed', async () => {
    const m = await metrics(base);
    return m.ember_active_sequences === 0 && m.ember_cancelled_total > before.ember_cancelled_total ? m : null;
  }, 10000) : await metrics(base);
  const r = await last(page, '.msg.assistant');
  await page.evaluate(() => { window.fetch = window.__fetch; });
  check('ui_stop_frees_row', clicked && during.ember_active_sequences === 1 && after.ember_active_sequences === 0 &&
        r.done === 'stopped' && /stopped/.test(r.stats),
        JSON.stringify({ clicked, during: during.ember_active_sequences, after: after.ember_active_sequences,
                         done: r.done, stats: r.stats, chars: r.text.length }));
});

await attempt('ui_metrics_panel', async () => {
  await page.waitForFunction(() => {
    const dd = document.querySelector('[data-metric="cancelled"]');
    return dd && Number(dd.textContent) >= 1 && document.querySelector('[data-metric="active"]').textContent.startsWith('0 /');
  }, { timeout: 10000 });
  check('ui_metrics_panel', true);
});

check('ui_no_console_errors', problems.length === 0, problems.join('\n     '));

// The policy is enforced: an inline script put into the page does not run
// (DevTools' own evaluation is exempt, a script element is not).
await attempt('ui_csp_blocks_inline_script', async () => {
  const r = await page.evaluate(async () => {
    let violation = '';
    document.addEventListener('securitypolicyviolation', (e) => { violation = e.violatedDirective; }, { once: true });
    const s = document.createElement('script');
    s.textContent = 'window.__inlineRan = true;';
    document.head.append(s);
    await new Promise((r) => setTimeout(r, 100));
    return { ran: Boolean(window.__inlineRan), violation };
  });
  check('ui_csp_blocks_inline_script', !r.ran && /script-src/.test(r.violation), JSON.stringify(r));
});

// --api-key: asked once (a wrong key is refused), kept in the page's
// storage, sent as a header and never in a URL.
await attempt('ui_api_key', async () => {
  const k = await openPage(keyedBase + '/');
  await k.page.waitForSelector('#key-dialog[open]', { timeout: 10000 });
  await k.page.type('#key', 'wrong-' + key);
  await k.page.keyboard.press('Enter');
  await k.page.waitForFunction(() => document.getElementById('key-dialog').open &&
                               !document.getElementById('key-error').hidden, { timeout: 10000 });
  await k.page.type('#key', key);
  await k.page.keyboard.press('Enter');
  await k.page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
  const stored = await k.page.evaluate(() => localStorage.getItem('ember.apiKey'));
  const headers = [];
  k.page.on('request', (r) => { if (r.url().endsWith('/v1/chat/completions')) headers.push(r.headers().authorization); });
  await send(k.page, 'Tell me a joke.');
  await k.page.waitForSelector('.msg.assistant[data-done]', { timeout: 20000 });
  const reply = await last(k.page, '.msg.assistant');
  await k.page.reload({ waitUntil: 'load' });
  await k.page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
  const asked = await k.page.evaluate(() => document.getElementById('key-dialog').open);
  const inUrl = k.urls.filter((u) => u.includes(key));
  const others = k.problems.filter((p) => !/401/.test(p));
  check('ui_api_key', stored === key && headers[0] === 'Bearer ' + key && reply.text.length > 0 && reply.done === 'stop' &&
        !asked && inUrl.length === 0 && others.length === 0,
        JSON.stringify({ stored, headers, reply, asked, inUrl, others }));
  await k.context.close();
});

await browser.close();
process.exit(failed);
