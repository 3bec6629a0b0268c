// The official `openai` npm client against `ember serve` running the trained
// demo model: it sends tools and a user request, gets the model's tool call
// back in the client's own types, returns the tool's result, and gets the
// final answer.
//   node serve_demo_openai.mjs NODE_MODULES BASE_URL MODEL CASE.json
// CASE.json (tests/e2e/serve_demo.sh): {"tools", "messages", "result",
//   "call": {"name", "arguments"} or null, "final": {"content", "calls"} or null,
//   "truth": {"name", "arguments"}, "truth_required": bool, "looked": N}: call
//   and final are what `ember generate --greedy` emits for the same rendered
//   prompts, parsed; truth is the corpus generator's expected call, required
//   when the case was chosen as one the model gets right.
// Prints PASS/FAIL lines; exits 1 when any check failed.
import { readFileSync } from 'node:fs';

const [nm, baseURL, model, casePath] = process.argv.slice(2);
const { default: OpenAI } = await import(nm + '/openai/index.mjs');
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
const c = JSON.parse(readFileSync(casePath, 'utf8'));

let failed = 0;
function check(name, ok, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}`);
  if (!ok) { failed = 1; if (detail !== undefined) console.log('     ' + JSON.stringify(detail).slice(0, 600)); }
}

// JSON equality with numbers compared by value (3 == 3.0) and key order ignored.
function same(a, b) {
  if (typeof a === 'number' && typeof b === 'number') return a === b;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i]));
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a).sort(), kb = Object.keys(b).sort();
    return same(ka, kb) && ka.every((k) => same(a[k], b[k]));
  }
  return a === b;
}

try {
  check('demo_generate_emits_one_call', c.call !== null, 'ember generate gave no single well-formed call');
  const first = await client.chat.completions.create({
    model, messages: c.messages, tools: c.tools, tool_choice: 'auto', max_tokens: 200, temperature: 0,
  });
  const choice = first.choices[0];
  const calls = choice.message.tool_calls || [];
  let args = null;
  try { args = calls.length ? JSON.parse(calls[0].function.arguments) : null; } catch { args = null; }
  check('demo_openai_tool_call', c.call !== null && choice.finish_reason === 'tool_calls' &&
        calls.length === 1 && calls[0].function.name === c.call.name && same(args, c.call.arguments),
        { want: c.call, got: choice.message, finish: choice.finish_reason });
  const right = calls.length === 1 && calls[0].function.name === c.truth.name && same(args, c.truth.arguments);
  if (c.truth_required) {
    check('demo_openai_expected_call', right, { want: c.truth, got: calls.length ? calls[0].function : null });
  }
  console.log(`     the model called ${calls.length ? calls[0].function.name + calls[0].function.arguments : 'nothing'}; ` +
              `the request (held-out single-call request ${c.looked}) asked for ` +
              `${c.truth.name}${JSON.stringify(c.truth.arguments)}: ${right ? 'right' : 'wrong'}` +
              (c.truth_required ? '' : ' (none of the first 40 right: reported only)'));
  if (calls.length && c.final) {
    const followUp = [...c.messages, choice.message,
      { role: 'tool', tool_call_id: calls[0].id, content: c.result }];
    const second = await client.chat.completions.create({
      model, messages: followUp, tools: c.tools, max_tokens: 200, temperature: 0,
    });
    const msg = second.choices[0].message;
    check('demo_openai_final_answer', (msg.content || '').trim() === c.final.content &&
          (msg.tool_calls || []).length === c.final.calls, { want: c.final, got: msg });
    console.log(`     final answer: ${JSON.stringify(msg.content)} (tool result ${c.result})`);
  }
} catch (e) {
  check('demo_openai_round_trip', false, String(e && e.stack ? e.stack : e));
}
process.exit(failed);
