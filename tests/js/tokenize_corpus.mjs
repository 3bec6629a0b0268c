// A deterministic multilingual test corpus for tokenizer comparisons:
// makeCorpus(seed, n) returns n strings mixing scripts (CJK, Arabic,
// Devanagari, Thai, Cyrillic, Greek, Hangul), emoji with ZWJ sequences and
// modifiers, combining marks, code, long digit runs, whitespace runs and
// newlines, special tokens inline and very long words.
// U+0085 and U+FEFF are left out on purpose: transformers.js and the
// Oniguruma/PCRE2 engines disagree on whether they are whitespace.

function mulberry32(a) {
  return function () {
    a |= 0; a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = ('the quick brown fox jumps over lazy dog Hello World tokenizer inference runtime ' +
  "don't it's we're they've I'm you'll she'd HELLO'S Don'T naïve café résumé Ångström " +
  'straße Œuvre façade coöperate déjà-vu e-mail U.S.A. Dr. Mr. 3rd 21st 1990s').split(' ');
const SCRIPTS = [
  '你好世界', '机器学习模型', '東京は日本の首都です', 'ひらがなカタカナ', 'こんにちは、世界！',
  '안녕하세요 세계', '한국어 토크나이저', 'مرحبا بالعالم', 'اللغة العربية جميلة', 'ٱلسَّلَامُ عَلَيْكُمْ',
  'नमस्ते दुनिया', 'हिन्दी भाषा', 'क्षत्रिय ज्ञान', 'สวัสดีชาวโลก', 'ภาษาไทยง่ายนิดเดียว',
  'Привет мир', 'Съешь же ещё этих мягких французских булок', 'Γειά σου Κόσμε', 'שלום עולם',
  'Ελληνικά ΑΒΓ', 'Türkçe ğüşıöç İstanbul', 'Tiếng Việt có dấu', 'ქართული', 'Հայերեն', 'ᚠᛇᚻ᛫ᛒᛦᚦ',
];
const EMOJI = [
  '😀', '👍🏽', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🧑🏿‍💻', '❤️', '🇯🇵', '🇺🇸🇬🇧', '👩‍❤️‍💋‍👨', '🫠', '🐈‍⬛',
  '✌🏻', '#️⃣', '🏴󠁧󠁢󠁳󠁣󠁴󠁿', '😂😂😂', '🤖', '⭐️', '☕',
];
const COMBINING = ['e\u0301', 'a\u0308', 'n\u0303', 'Z\u0351\u0336\u0324a\u0345\u0317l\u0338g\u0352o', 'A\u030a',
  'o\u0302\u0323', '\u1e9b\u0323', 'i\u0307', 'q\u0307\u0323', '\u0915\u093c', 'ﬁ', 'Ⅻ', '①', '㍿', 'Å', 'Ω'];
const CODE = [
  'def f(x):\n    return x ** 2\n', 'for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}',
  'const x = await fetch("https://example.com/api?q=1&r=2");', '#include <stdio.h>\nint main(void) { return 0; }',
  '{"key": [1, 2.5, -3e10, null, true], "nested": {"a": "b"}}', 'SELECT * FROM users WHERE id = 42;',
  '<div class="x">&nbsp;&lt;tag&gt;</div>', 'x = y // 2 if y % 2 == 0 else (y >> 1) | 0xFF',
  'fn main() -> Result<(), Box<dyn Error>> { Ok(()) }', '$ ls -la | grep "\\.c$" && echo done',
  '    indented\n        more\n\tTab', 'a_b_c snake_case camelCase PascalCase kebab-case SCREAMING_CASE',
  '<think>\nreasoning\n</think>\n', '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>',
];
const SPECIAL = ['<|im_start|>', '<|im_end|>', '<|endoftext|>', '<think>', '</think>', '<tool_call>',
  '<start_of_turn>', '<end_of_turn>', '<bos>', '<eos>', '<pad>', '<|im_start', 'im_end|>', '<unused0>'];
const WS = [' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', ' \n ', '\u00a0', '\u3000', '\u2003', '\n\n\n\n',
  '        ', ' \t \t', '\u200b', '\u2028'];
const PUNCT = ['.', ',', '!', '?', '...', '—', '–', '«', '»', '“', '”', '„', '¿', '¡', '·', '•', '…', '()',
  '[]', '{}', '\'', '"', '`', '~', '@#$%^&*', '。', '、', '，', '！', '？', '：'];

export function makeCorpus(seed, n) {
  const rnd = mulberry32(seed);
  const pick = (a) => a[Math.floor(rnd() * a.length)];
  const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));
  const digits = (k) => Array.from({ length: k }, () => String(int(0, 9))).join('');
  const letters = (k, alphabet) => Array.from({ length: k }, () => pick(alphabet)).join('');
  const codepoints = (lo, hi, k) => Array.from({ length: k }, () => String.fromCodePoint(int(lo, hi))).join('');
  const gens = [
    () => pick(WORDS),
    () => pick(SCRIPTS),
    () => pick(EMOJI),
    () => pick(COMBINING),
    () => pick(CODE),
    () => pick(SPECIAL),
    () => pick(WS),
    () => pick(PUNCT),
    () => digits(int(1, 40)),
    () => String(int(0, 1e6)) + '.' + digits(int(1, 8)),
    () => letters(int(20, 400), 'abcdefghijklmnopqrstuvwxyz'),
    () => letters(int(10, 120), ['字', '词', '語', 'の', 'ア', '한', 'ก', 'ع', 'न']),
    () => codepoints(0x4e00, 0x9fa5, int(1, 30)), // CJK ideographs
    () => codepoints(0x3040, 0x30ff, int(1, 20)), // kana
    () => codepoints(0x0600, 0x06ff, int(1, 20)), // Arabic
    () => codepoints(0x0900, 0x097f, int(1, 20)), // Devanagari
    () => codepoints(0x0e00, 0x0e7f, int(1, 20)), // Thai
    () => codepoints(0xac00, 0xd7a3, int(1, 20)), // Hangul
    () => codepoints(0x0300, 0x036f, int(1, 4)), // bare combining marks
    () => codepoints(0x00a0, 0x024f, int(1, 20)), // Latin-1 and Latin Extended
    () => codepoints(0x1f300, 0x1f64f, int(1, 6)), // emoji blocks
    () => codepoints(0x20, 0x7e, int(1, 60)), // printable ASCII soup
    () => codepoints(0x01, 0x1f, int(1, 4)), // control characters
  ];
  const out = [
    '', ' ', '\n', 'a', 'Hello world', ' Hello', 'hello  world', 'x'.repeat(5000), '1'.repeat(500),
    '\n'.repeat(50), ' '.repeat(100), '\t'.repeat(33), 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa ', "I'm here, it's done. They'll see.",
    '<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n', 'x<|im_end|>y', '<|im_start|><|im_start|>',
    'Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３', '𝕳𝖊𝖑𝖑𝖔 𝒲ℴ𝓇𝓁𝒹', 'ŉ ǰ ΐ ﬀ ﬃ', 'İstanbul ΣΊΣΥΦΟΣ', '\r\r\n\r', 'tab\tsep\tvalues\n',
  ];
  while (out.length < n) {
    const parts = int(1, 10);
    let s = '';
    for (let k = 0; k < parts; k++) {
      s += pick(gens)();
      if (rnd() < 0.5) s += pick(WS.slice(0, 8));
    }
    out.push(s);
  }
  return out;
}
