// The official `openai` npm client asks a running `ember serve --tts` for
// speech: a WAV and raw PCM of whole 80 ms frames (1920 samples at 24 kHz),
// the same audio for the same seed, and errors for a bad voice or format.
//   node serve_speech.mjs NODE_MODULES BASE_URL MODEL VOICE
const [nm, baseURL, model, voice] = process.argv.slice(2);
const { default: OpenAI } = await import(nm + '/openai/index.mjs');
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 120000 });

let failed = 0;
function check(name, ok, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}`);
  if (!ok) { failed = 1; if (detail !== undefined) console.log('     ' + String(detail).slice(0, 400)); }
}
async function attempt(name, fn) {
  try { await fn(); } catch (e) { check(name, false, e && e.stack ? e.stack : e); }
}
const input = 'Hello from ember, speaking through the OpenAI client.';

let wav;
await attempt('openai_speech_wav', async () => {
  const res = await client.audio.speech.create({ model, voice, input, response_format: 'wav', seed: 3, max_frames: 30 });
  wav = Buffer.from(await res.arrayBuffer());
  const riff = wav.toString('ascii', 0, 4) === 'RIFF' && wav.toString('ascii', 8, 12) === 'WAVE';
  const rate = wav.readUInt32LE(24), bits = wav.readUInt16LE(34), data = wav.readUInt32LE(40);
  check('openai_speech_wav', riff && rate === 24000 && bits === 16 && data === wav.length - 44 &&
        data > 0 && data % 3840 === 0, `riff ${riff} rate ${rate} bits ${bits} data ${data} len ${wav.length}`);
});

await attempt('openai_speech_pcm_same_audio', async () => {
  const res = await client.audio.speech.create({ model, voice, input, response_format: 'pcm', seed: 3, max_frames: 30 });
  const pcm = Buffer.from(await res.arrayBuffer());
  // within one s16 step: how chunks fall decides which rows the Winograd
  // convs compute, a ~1e-6 difference
  let near = wav && pcm.length === wav.length - 44;
  for (let i = 0; near && i < pcm.length; i += 2)
    near = Math.abs(pcm.readInt16LE(i) - wav.readInt16LE(44 + i)) <= 1;
  check('openai_speech_pcm_same_audio', near && pcm.length % 3840 === 0,
        `pcm ${pcm.length} bytes, wav data ${wav ? wav.length - 44 : '?'}`);
});

await attempt('openai_speech_bad_voice', async () => {
  try {
    await client.audio.speech.create({ model, voice: 'nobody', input });
    check('openai_speech_bad_voice', false, 'no error');
  } catch (e) {
    check('openai_speech_bad_voice', e.status === 400 && e.param === 'voice', `${e.status} ${e.param}`);
  }
});

await attempt('openai_speech_bad_format', async () => {
  try {
    await client.audio.speech.create({ model, voice, input, response_format: 'mp3' });
    check('openai_speech_bad_format', false, 'no error');
  } catch (e) {
    check('openai_speech_bad_format', e.status === 400 && e.param === 'response_format',
          `${e.status} ${e.param}`);
  }
});
process.exit(failed);
