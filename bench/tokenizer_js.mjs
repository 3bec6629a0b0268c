// The two halves of bench/tokenizer.sh on the transformers.js side:
//   node bench/tokenizer_js.mjs corpus NODE_MODULES OUT.jsonl MEGABYTES
//       writes the benchmark corpus: documents of ~4 KB built from the
//       test corpus generator (tests/js/tokenize_corpus.mjs), one JSON string per line
//   node bench/tokenizer_js.mjs encode NODE_MODULES TOKENIZER_DIR CORPUS.jsonl
//       prints {"transformers_js_mb_s": ...}: median of 3 passes, single thread
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeCorpus } from '../tests/js/tokenize_corpus.mjs';

const [mode, nm, a, b] = process.argv.slice(2);
if (mode === 'corpus') {
  const target = Number(b) * 1e6;
  const pool = makeCorpus(7, 20000);
  const docs = [];
  let bytes = 0, k = 0, doc = '';
  while (bytes < target) {
    doc += pool[k++ % pool.length] + '\n';
    if (doc.length > 4000) {
      docs.push(doc);
      bytes += Buffer.byteLength(doc);
      doc = '';
    }
  }
  writeFileSync(a, docs.map((d) => JSON.stringify(d)).join('\n') + '\n');
} else {
  const { PreTrainedTokenizer } = await import(nm + '/@huggingface/transformers/dist/transformers.node.mjs');
  const tok = new PreTrainedTokenizer(JSON.parse(readFileSync(join(a, 'tokenizer.json'), 'utf8')),
    JSON.parse(readFileSync(join(a, 'tokenizer_config.json'), 'utf8')));
  const docs = readFileSync(b, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));
  const bytes = docs.reduce((s, d) => s + Buffer.byteLength(d), 0);
  const times = [];
  for (let r = 0; r < 3; r++) {
    const t0 = process.hrtime.bigint();
    for (const d of docs) tok.encode(d, { add_special_tokens: false });
    times.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  times.sort((x, y) => x - y);
  console.log(JSON.stringify({ transformers_js_mb_s: bytes / 1e6 / times[1] }));
}
