// Compares ember's tokenizer with transformers.js on a generated corpus.
//   node tests/js/tokenize_compare.mjs NODE_MODULES EMBER_BIN [--texts=FILE] NAME=TOKENIZER_DIR...
// --texts=FILE (JSON lines, one string each) replaces the generated corpus for
// the tokenizers named after it.
// For each tokenizer (a directory with tokenizer.json and tokenizer_config.json):
// ids of encode(text) must be equal, decode(ids) must be equal, and
// decode(encode(x)) == x wherever the tokenizer is lossless for x.
// Prints one PASS/FAIL line per check and a mismatch count; exits 1 on any.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeCorpus } from './tokenize_corpus.mjs';

const [nm, ember, ...specs] = process.argv.slice(2);
const { PreTrainedTokenizer } = await import(nm + '/@huggingface/transformers/dist/transformers.node.mjs');

const corpus = makeCorpus(20240611, Number(process.env.EMBER_TOK_CORPUS_N || 3200));
const work = mkdtempSync(join(tmpdir(), 'ember-tok-'));
let failed = 0;
let given = null;

function runEmber(args, input) {
  return execFileSync(ember, args, { input, maxBuffer: 1 << 28 }).toString().split('\n').filter((l) => l.length);
}

for (const spec of specs) {
  if (spec.startsWith('--texts=')) {
    given = readFileSync(spec.slice('--texts='.length), 'utf8').split('\n').filter((l) => l.length).map((l) => JSON.parse(l));
    continue;
  }
  const eq = spec.indexOf('=');
  const name = spec.slice(0, eq), dir = spec.slice(eq + 1);
  const tokJson = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8'));
  const cfg = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8'));
  const tok = new PreTrainedTokenizer(tokJson, cfg);
  const specials = tokJson.added_tokens.map((t) => t.content);
  const texts = (given || corpus).concat(specials.slice(0, 40).map((s) => `x${s}y ${s}\n${s}`));
  const t0 = Date.now();
  const want = texts.map((t) => tok.encode(t));
  const jsMs = Date.now() - t0;
  const input = texts.map((t) => JSON.stringify(t)).join('\n') + '\n';
  const got = runEmber(['tokenize', '-m', dir, '--jsonl'], input).map((l) => JSON.parse(l));
  let mism = 0;
  for (let i = 0; i < texts.length; i++) {
    if (JSON.stringify(got[i]) !== JSON.stringify(want[i])) {
      if (mism < 5) console.log(`  ${name} mismatch #${i} ${JSON.stringify(texts[i]).slice(0, 160)}\n    js:    ${JSON.stringify(want[i]).slice(0, 300)}\n    ember: ${JSON.stringify(got[i]).slice(0, 300)}`);
      mism++;
    }
  }
  console.log(`${mism ? 'FAIL' : 'PASS'} ${name}: encode ids equal on ${texts.length} strings (${mism} mismatches, transformers.js ${jsMs} ms)`);
  if (mism) failed++;

  // decode: ember's decode of the reference ids against transformers.js's
  const idsIn = want.map((ids) => JSON.stringify(ids)).join('\n') + '\n';
  const dec = runEmber(['detokenize', '-m', dir, '--jsonl'], idsIn).map((l) => JSON.parse(l));
  let dm = 0, rt = 0, rtChecked = 0;
  for (let i = 0; i < texts.length; i++) {
    const jsDec = want[i].length ? tok.decode(want[i], { skip_special_tokens: false, clean_up_tokenization_spaces: false }) : '';
    if (dec[i] !== jsDec) {
      if (dm < 5) console.log(`  ${name} decode mismatch #${i}\n    js:    ${JSON.stringify(jsDec).slice(0, 200)}\n    ember: ${JSON.stringify(dec[i]).slice(0, 200)}`);
      dm++;
    }
    // lossless where the normalizer keeps the text and nothing is added
    const t = texts[i];
    const bos = name.startsWith('gemma') ? '<bos>' : '';
    const lossless = t.normalize('NFC') === t && !t.includes('\u2581');
    if (lossless) {
      rtChecked++;
      if (dec[i] !== bos + t) {
        if (rt < 3) console.log(`  ${name} roundtrip #${i}: ${JSON.stringify(t).slice(0, 120)} -> ${JSON.stringify(dec[i]).slice(0, 120)}`);
        rt++;
      }
    }
  }
  console.log(`${dm ? 'FAIL' : 'PASS'} ${name}: decode equal on ${texts.length} id lists (${dm} mismatches)`);
  console.log(`${rt ? 'FAIL' : 'PASS'} ${name}: decode(encode(x)) == x on ${rtChecked} lossless strings (${rt} mismatches)`);
  if (dm) failed++;
  if (rt) failed++;
}
rmSync(work, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
