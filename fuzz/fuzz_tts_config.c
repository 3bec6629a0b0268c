/* libFuzzer target: Qwen3-TTS config.json (talker and, for Base models, the
 * speaker encoder), generation_config.json and speech_tokenizer/config.json
 * (decoder and encoder) parsing. Any input gives a config or an
 * error, never a crash, leak or undefined behaviour; the prompt builder runs
 * on what parses. */
#include <stddef.h>
#include <stdint.h>

#include "tts/code2wav_config.h"
#include "tts/qwen3_tts_config.h"
#include "tts/speaker_config.h"
#include "tts/speech_encoder.h"
#include "tts/tts_prompt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tts_config c;
    tts_gen_config g;
    c2w_config d;
    if (c2w_config_parse((const char *)data, size, "fuzz/speech_tokenizer/config.json", &d) ==
        EMBER_OK) {
        /* a decoder config that parses has a whole number of samples per
         * frame and channels that halve evenly */
        if (d.samples_per_frame < 1 || d.decoder_dim >> d.n_blocks << d.n_blocks != d.decoder_dim ||
            d.n_quantizers < 2 || d.vq_dim * 2 != d.codebook_dim)
            __builtin_trap();
    }
    spk_config sc;
    if (spk_config_parse((const char *)data, size, "fuzz/config.json", &sc) == EMBER_OK) {
        /* a speaker encoder config that parses can be built: blocks keep
         * their width, split evenly, and the aggregation takes them all */
        int32_t sum = 0;
        if (sc.n_layers < 3 || sc.n_layers > SPK_MAX_LAYERS || sc.res2net_scale < 2) __builtin_trap();
        for (int32_t b = 1; b < sc.n_layers - 1; b++) {
            if (sc.channels[b] % sc.res2net_scale || sc.channels[b] != sc.channels[b - 1])
                __builtin_trap();
            sum += sc.channels[b];
        }
        if (sum != sc.channels[sc.n_layers - 1]) __builtin_trap();
    }
    se_config ec;
    if (se_config_parse((const char *)data, size, "fuzz/speech_tokenizer/config.json", &ec) ==
        EMBER_OK) {
        /* an encoder config that parses: whole frames, codes within the
         * quantizers, widths that halve in the residual units */
        if (ec.samples_per_frame < 2 || ec.n_codes > ec.n_quantizers || ec.n_codes < 1 ||
            ec.n_filters % ec.compress || ec.n_stages < 1 || ec.head_dim % 2)
            __builtin_trap();
    }
    tts_gen_config_default(&g);
    (void)tts_gen_config_parse((const char *)data, size, "fuzz/generation_config.json", &g);
    if (tts_config_parse((const char *)data, size, "fuzz/config.json", &c) != EMBER_OK) return 0;
    /* A config that parses must be one the model can be built from. */
    if (c.talker.n_heads % c.talker.n_kv_heads || c.predictor.n_heads % c.predictor.n_kv_heads ||
        c.n_groups < 2 || c.n_groups > TTS_MAX_GROUPS || c.predictor.vocab > c.talker.vocab ||
        c.n_languages > TTS_MAX_NAMED || c.n_speakers > TTS_MAX_NAMED)
        __builtin_trap();
    for (int32_t i = 0; i < c.n_speakers; i++)
        if (c.speakers[i].dialect >= c.n_languages) __builtin_trap();
    const int32_t ids[] = {c.im_start, c.assistant, 0, 0, c.im_end, 0, c.im_start, c.assistant, 0};
    tts_prompt p;
    for (int32_t spk = -1; spk < c.n_speakers && spk < 3; spk++)
        if (tts_prompt_build(&c, ids, 9, spk, c.n_languages ? 0 : -1, spk & 1, &p) == EMBER_OK)
            tts_prompt_free(&p);
    return 0;
}
