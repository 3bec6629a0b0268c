// Renders chat-template cases with transformers.js's apply_chat_template and
// compares them with ember's output (`ember template --cases`), byte for byte.
//   node chat_compare.mjs NODE_MODULES TOKENIZER_JSON TOKENIZER_CONFIG CASES EMBER_OUT LABEL
// A case that raises in transformers.js must raise in ember too (ember writes
// {"error": message} for it). Prints the mismatch count and the first
// mismatch; exits 1 when there is any.
import { readFileSync } from 'node:fs';

const [nm, tokJsonPath, configPath, casesPath, emberPath, label] = process.argv.slice(2);
const { PreTrainedTokenizer } = await import(nm + '/@huggingface/transformers/dist/transformers.node.mjs');
const readJson = (p) => JSON.parse(readFileSync(p, 'utf8'));
const tokenizer = new PreTrainedTokenizer(readJson(tokJsonPath), readJson(configPath));
const cases = readJson(casesPath);
const ember = readJson(emberPath);

function render(c) {
  const options = { tokenize: false, add_generation_prompt: !!c.add_generation_prompt };
  if (c.tools != null) options.tools = c.tools;
  if (typeof c.enable_thinking === 'boolean') options.enable_thinking = c.enable_thinking;
  try {
    return { text: tokenizer.apply_chat_template(c.messages, options) };
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
}

// Where two strings first differ, with some context, as JSON strings.
function firstDifference(a, b) {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const from = Math.max(0, i - 40);
  return `first difference at offset ${i}\n  js:    ${JSON.stringify(a.slice(from, i + 60))}\n  ember: ${JSON.stringify(b.slice(from, i + 60))}`;
}

let mismatches = 0, raised = 0, first = null;
if (ember.length !== cases.length) {
  console.log(`FAIL ${label}: ember rendered ${ember.length} cases, expected ${cases.length}`);
  process.exit(1);
}
cases.forEach((c, i) => {
  const js = render(c);
  const em = ember[i];
  let why = null;
  if (js.error !== undefined) {
    raised++;
    if (typeof em === 'string') why = `transformers.js raised "${js.error}" but ember rendered ${JSON.stringify(em.slice(0, 200))}`;
    else if (!em.error.includes(js.error)) console.log(`note ${label} case ${i}: both raised; js: ${js.error} | ember: ${em.error}`);
  } else if (typeof em !== 'string') {
    why = `ember raised "${em.error}" but transformers.js rendered ${JSON.stringify(js.text.slice(0, 200))}`;
  } else if (em !== js.text) {
    why = firstDifference(js.text, em);
  }
  if (why) {
    mismatches++;
    if (!first) first = `case ${i}: ${why}`;
  }
});
console.log(`${label}: ${cases.length} cases (${raised} raise in transformers.js), ${mismatches} mismatches`);
if (first) console.log(`first mismatch: ${first}`);
process.exit(mismatches ? 1 : 0);
