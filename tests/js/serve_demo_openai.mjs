// The official `openai` npm client against `ember serve` running the trained
// demo model: it sends tools and a user request, gets back the function and
// the arguments the request asks for, returns the tool's result, and gets a
// final answer that uses it.
//   node serve_demo_openai.mjs NODE_MODULES BASE_URL MODEL CASE.json
// CASE.json comes from the demo corpus's held-out generator (tests/e2e/serve_demo.sh):
//   {"tools": [...], "messages": [...], "call": {"name", "arguments"},
//    "result": "<tool result JSON>", "answer_values": ["...", ...], "min_values": N}
// answer_values are the result's values that the generator's own answer
// quotes; the model was trained on several phrasings that quote different
// subsets, so the answer must quote at least min_values of them (and no
// tool call).
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
  const first = await client.chat.completions.create({
    model, messages: c.messages, tools: c.tools, tool_choice: 'auto', max_tokens: 200, temperature: 0,
  });
  const choice = first.choices[0];
  const calls = choice.message.tool_calls || [];
  let args = null;
  try { args = calls.length ? JSON.parse(calls[0].function.arguments) : null; } catch { args = null; }
  check('demo_openai_tool_call', choice.finish_reason === 'tool_calls' && calls.length === 1 &&
        calls[0].function.name === c.call.name && same(args, c.call.arguments),
        { want: c.call, got: choice.message, finish: choice.finish_reason });

  if (calls.length) {
    const followUp = [...c.messages, choice.message,
      { role: 'tool', tool_call_id: calls[0].id, content: c.result }];
    const second = await client.chat.completions.create({
      model, messages: followUp, tools: c.tools, max_tokens: 200, temperature: 0,
    });
    const answer = second.choices[0].message.content || '';
    const quoted = c.answer_values.filter((v) => answer.includes(v));
    check('demo_openai_final_answer_uses_result', second.choices[0].finish_reason === 'stop' &&
          !(second.choices[0].message.tool_calls || []).length && quoted.length >= c.min_values,
          { answer, quoted, want: c.answer_values, result: c.result });
    console.log(`     call ${calls[0].function.name}(${calls[0].function.arguments}) -> ${JSON.stringify(answer)}`);
  } else {
    check('demo_openai_final_answer_uses_result', false, 'no tool call to answer');
  }
} catch (e) {
  check('demo_openai_round_trip', false, String(e && e.stack ? e.stack : e));
}
process.exit(failed);
