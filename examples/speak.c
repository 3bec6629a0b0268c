/* Streaming speech to a WAV file over the public API only: each chunk of
 * PCM is appended to the file the moment the decoder has it.
 *
 *     cc speak.c $(pkg-config --cflags --libs ember) -o speak
 *     ./speak QWEN3_TTS_DIR "Hello there." out.wav [speaker] [language]
 */
#include <stdio.h>
#include <string.h>

#include <ember.h>

typedef struct out {
    FILE *f;
    size_t samples;
} out;

static void put32(unsigned char *p, unsigned v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* A 44-byte PCM s16 mono header for `samples` samples at `rate`. */
static void wav_header(unsigned char h[44], unsigned rate, size_t samples)
{
    memcpy(h, "RIFF\0\0\0\0WAVEfmt \x10\0\0\0\x01\0\x01\0\0\0\0\0\0\0\0\0\x02\0\x10\0data", 40);
    put32(h + 4, (unsigned)(36 + samples * 2));
    put32(h + 24, rate);
    put32(h + 28, rate * 2);
    put32(h + 40, (unsigned)(samples * 2));
}

static int on_chunk(void *user, const int16_t *pcm, size_t n, const ember_speech_chunk *c)
{
    out *o = user;
    unsigned char b[2];
    for (size_t i = 0; i < n; i++) { /* little-endian whatever the host */
        b[0] = (unsigned char)(pcm[i] & 0xff);
        b[1] = (unsigned char)((unsigned)pcm[i] >> 8);
        if (fwrite(b, 1, 2, o->f) != 2) return 1; /* a full disk cancels */
    }
    o->samples += n;
    fprintf(stderr, "chunk %d: %d frames, ready at %.0f ms\n", c->index, c->n_frames, c->ready_ms);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s QWEN3_TTS_DIR TEXT OUT.wav [speaker] [language]\n", argv[0]);
        return 2;
    }
    ember_tts_params tp = ember_tts_default_params();
    tp.max_frames = 200;
    ember_tts *tts = NULL;
    if (ember_tts_load(argv[1], &tp, &tts)) {
        fprintf(stderr, "speak: %s\n", ember_last_error());
        return 1;
    }
    out o = {fopen(argv[3], "wb"), 0};
    unsigned char h[44];
    wav_header(h, (unsigned)ember_tts_sample_rate(tts), 0);
    if (!o.f || fwrite(h, 1, 44, o.f) != 44) {
        fprintf(stderr, "speak: cannot write %s\n", argv[3]);
        ember_tts_free(tts);
        return 1;
    }
    ember_speech_request rq = ember_speech_default_request();
    rq.text = argv[2];
    rq.speaker = argc > 4 ? argv[4] : NULL;
    rq.language = argc > 5 ? argv[5] : NULL;
    rq.max_frames = 50;
    rq.chunks = "2,4,8";
    ember_speech_timings t;
    ember_status st = ember_tts_speak(tts, &rq, NULL, on_chunk, &o, &t);
    if (st == EMBER_OK) {
        wav_header(h, (unsigned)ember_tts_sample_rate(tts), o.samples); /* the final lengths */
        fseek(o.f, 0, SEEK_SET);
        fwrite(h, 1, 44, o.f);
        printf("%s: %zu samples, %d frames in %d chunks; first audio %.0f ms, total %.0f ms\n", argv[3],
               o.samples, t.frames, t.chunks, t.first_audio_ms, t.total_ms);
    } else {
        fprintf(stderr, "speak: %s\n", ember_last_error());
    }
    fclose(o.f);
    ember_tts_free(tts);
    return st == EMBER_OK ? 0 : 1;
}
