// The official `openai` npm client against a running `ember serve`: model
// list, chat (plain and streamed, with usage), a tool-call round trip, tool_choice
// (a named function, "required" streamed),
// completions (text and token ids, plain and streamed) and error statuses.
//   node serve_openai.mjs NODE_MODULES BASE_URL MODEL [API_KEY]
// Prints PASS/FAIL lines; exits 1 when any check failed.
const [nm, baseURL, model, apiKey] = process.argv.slice(2);
const { default: OpenAI } = await import(nm + '/openai/index.mjs');
const client = new OpenAI({ baseURL, apiKey: apiKey || 'unused', maxRetries: 0, timeout: 60000 });

let failed = 0;
function check(name, ok, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}`);
  if (!ok) { failed = 1; if (detail !== undefined) console.log('     ' + JSON.stringify(detail).slice(0, 400)); }
}
async function attempt(name, fn) {
  try { await fn(); } catch (e) { check(name, false, String(e && e.stack ? e.stack : e)); }
}

const messages = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Say something about the weather.' },
];

await attempt('openai_models_list', async () => {
  const list = await client.models.list();
  check('openai_models_list', list.data.some((m) => m.id === model), list.data);
});

let plain;
await attempt('openai_chat', async () => {
  plain = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0 });
  const c = plain.choices[0];
  check('openai_chat', c.message.role === 'assistant' && typeof c.message.content === 'string' &&
        ['stop', 'length'].includes(c.finish_reason) && plain.usage.prompt_tokens > 0 &&
        plain.usage.completion_tokens > 0 && plain.object === 'chat.completion', plain);
});

await attempt('openai_chat_stream', async () => {
  const stream = await client.chat.completions.create({
    model, messages, max_tokens: 12, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  });
  let text = '', finish = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta && c.delta.content) text += c.delta.content;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  // the same greedy request streamed gives the same reply and usage
  check('openai_chat_stream', plain && text === plain.choices[0].message.content &&
        finish === plain.choices[0].finish_reason && usage &&
        usage.completion_tokens === plain.usage.completion_tokens && chunks >= 2,
        { text, finish, usage, chunks });
});

const tools = [{
  type: 'function',
  function: {
    name: 'get_weather', description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];
await attempt('openai_tool_round_trip', async () => {
  const first = await client.chat.completions.create({
    model, messages, tools, tool_choice: 'auto', max_tokens: 6, temperature: 0,
  });
  // the tools are rendered into the prompt
  check('openai_tools_rendered', plain && first.usage.prompt_tokens > plain.usage.prompt_tokens + 20,
        [first.usage, plain && plain.usage]);
  // the client sends back an assistant tool call and its result, as an
  // agent does after running the tool
  const followUp = [
    ...messages,
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function',
      function: { name: 'get_weather', arguments: JSON.stringify({ city: 'Paris' }) } }] },
    { role: 'tool', tool_call_id: 'call_0', content: '{"temperature": 21}' },
  ];
  const second = await client.chat.completions.create({
    model, messages: followUp, tools, max_tokens: 6, temperature: 0,
  });
  check('openai_tool_round_trip', second.choices[0].message.role === 'assistant' &&
        second.usage.prompt_tokens > first.usage.prompt_tokens, second);
});

// a named tool_choice: the reply calls that function (the client's own
// types: message.tool_calls, the streamed tool_calls deltas)
await attempt('openai_tool_choice_named', async () => {
  const choice = { type: 'function', function: { name: 'get_weather' } };
  const r = await client.chat.completions.create({
    model, messages, tools, tool_choice: choice, max_tokens: 24, temperature: 0,
  });
  const calls = r.choices[0].message.tool_calls || [];
  check('openai_tool_choice_named', calls.length === 1 && calls[0].function.name === 'get_weather' &&
        ['tool_calls', 'length'].includes(r.choices[0].finish_reason), r.choices[0]);
  const stream = await client.chat.completions.create({
    model, messages, tools, tool_choice: 'required', max_tokens: 24, temperature: 0, stream: true,
  });
  let name = null;
  for await (const chunk of stream)
    for (const c of chunk.choices)
      for (const tc of (c.delta && c.delta.tool_calls) || []) if (tc.function && tc.function.name) name = tc.function.name;
  check('openai_tool_choice_required_stream', name === 'get_weather', { name });
});

await attempt('openai_completions', async () => {
  const a = await client.completions.create({ model, prompt: 'The model reads the prompt and', max_tokens: 10, temperature: 0 });
  const ids = await client.completions.create({ model, prompt: [1, 2, 3, 4], max_tokens: 5, temperature: 0 });
  const stream = await client.completions.create({
    model, prompt: 'The model reads the prompt and', max_tokens: 10, temperature: 0, stream: true,
  });
  let text = '', finish = null;
  for await (const chunk of stream)
    for (const c of chunk.choices) { text += c.text || ''; if (c.finish_reason) finish = c.finish_reason; }
  check('openai_completions', a.object === 'text_completion' && a.choices[0].text.length > 0 &&
        ids.usage.prompt_tokens === 4, [a, ids]);
  check('openai_completions_stream', text === a.choices[0].text && finish === a.choices[0].finish_reason,
        { text, finish, want: a.choices[0].text });
});

async function expectStatus(name, status, param, fn) {
  try {
    await fn();
    check(name, false, 'no error');
  } catch (e) {
    check(name, e.status === status && (!param || (e.error && e.error.param === param) || e.param === param),
          { status: e.status, error: e.error });
  }
}
await expectStatus('openai_unknown_model_404', 404, 'model', () =>
  client.chat.completions.create({ model: 'no-such-model', messages, max_tokens: 2 }));
await expectStatus('openai_bad_temperature_400', 400, 'temperature', () =>
  client.chat.completions.create({ model, messages, max_tokens: 2, temperature: 7 }));
await expectStatus('openai_n_2_400', 400, 'n', () =>
  client.chat.completions.create({ model, messages, max_tokens: 2, n: 2 }));

process.exit(failed);
