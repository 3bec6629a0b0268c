"""Speech: Qwen3-TTS text to speech, streamed chunk by chunk.

    import ember
    tts = ember.Speech("models/tts-tiny")
    with ember.WavWriter("out.wav", tts.sample_rate) as wav:
        for chunk in tts.stream("Hello there.", speaker="ryan"):
            wav.write(chunk.pcm)          # s16 samples, as they are decoded
"""

import array
import ctypes
import os
import sys
import wave

from . import _lib
from ._lib import check, enc, lib, path_arg
from ._stream import Stream

try:  # numpy is optional: samples come back as array.array without it
    import numpy as _np
except ImportError:  # pragma: no cover
    _np = None


class Chunk:
    """One decoded chunk of audio.

    pcm: mono s16 samples (array.array("h"), or a numpy int16 array when
    numpy is installed); index, first_frame, n_frames (80 ms frames);
    ready_ms (since the request started), decode_ms."""

    __slots__ = ("index", "first_frame", "n_frames", "ready_ms", "decode_ms", "pcm")

    def __init__(self, info, pcm):
        self.index, self.first_frame, self.n_frames = info.index, info.first_frame, info.n_frames
        self.ready_ms, self.decode_ms = info.ready_ms, info.decode_ms
        self.pcm = pcm

    def float32(self):
        """The samples as floats in [-1, 1) (numpy array or list)."""
        if _np is not None:
            return _np.asarray(self.pcm, dtype=_np.float32) / 32768.0
        return [s / 32768.0 for s in self.pcm]

    def __repr__(self):
        return "Chunk(%d: %d frames, %d samples, ready at %.0f ms)" % (
            self.index, self.n_frames, len(self.pcm), self.ready_ms)


class Audio:
    """A whole utterance: pcm (s16 samples), sample_rate, chunks (their
    Chunk info without samples) and timings (dict, ms)."""

    def __init__(self, sample_rate):
        self.sample_rate = sample_rate
        self.pcm = array.array("h")
        self.chunks = []
        self.timings = {}
        self.cancelled = False

    def write_wav(self, path):
        """Writes the samples as a 16-bit mono WAV file."""
        write_wav(path, self.pcm, self.sample_rate)


def _s16_bytes(pcm):
    if _np is not None and isinstance(pcm, _np.ndarray):
        return pcm.astype("<i2", copy=False).tobytes()
    a = pcm if isinstance(pcm, array.array) else array.array("h", pcm)
    if sys.byteorder == "big":
        a = array.array("h", a)
        a.byteswap()
    return a.tobytes()


class WavWriter:
    """A 16-bit mono WAV file written chunk by chunk (the standard
    library's wave module): a player can start on the file early."""

    def __init__(self, path, sample_rate):
        self._w = wave.open(os.fspath(path), "wb")
        self._w.setnchannels(1)
        self._w.setsampwidth(2)
        self._w.setframerate(int(sample_rate))
        self.samples = 0

    def write(self, pcm):
        """Appends s16 samples (array, list or numpy int16 array)."""
        self._w.writeframes(_s16_bytes(pcm))
        self.samples += len(pcm)

    def close(self):
        if self._w is not None:
            self._w.close()
            self._w = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def write_wav(path, pcm, sample_rate):
    """Writes s16 samples as a 16-bit mono WAV file."""
    with WavWriter(path, sample_rate) as w:
        w.write(pcm)


_TIMING_KEYS = ("frames", "chunks", "prefill_ms", "talker_ms", "predictor_ms", "decoder_ms",
                "first_audio_ms", "total_ms")


class Speech(_lib.Handle):
    """A loaded Qwen3-TTS model and one generation stream.

    It speaks one request at a time (one thread at a time; cancel() from
    any thread); load several to speak in parallel. The derived profile
    picks the talker's weight format unless weight_type is given or
    profile=False."""

    def __init__(self, path, weight_type=None, decoder_type=None, threads=0, decoder_threads=0,
                 kernels=None, max_frames=None, max_text_tokens=None, profile=True, hardware=None):
        self.path = os.fspath(path)
        tp = lib.ember_tts_default_params()
        tp.weight_type = _lib.type_code(weight_type)
        tp.decoder_type = _lib.type_code(decoder_type)
        self._kernels = enc(kernels)
        tp.kernels = self._kernels
        tp.n_threads, tp.decoder_threads = int(threads), int(decoder_threads)
        if max_frames:
            tp.max_frames = int(max_frames)
        if max_text_tokens:
            tp.max_text_tokens = int(max_text_tokens)
        self.profile_applied = False
        self.profile_why = ""
        if profile:
            pp = lib.ember_profile_default_params()
            hw = enc(hardware)
            pp.hardware = hw
            applied = ctypes.c_int()
            why = ctypes.c_void_p()
            check(lib.ember_profile_apply_tts(path_arg(self.path), ctypes.byref(pp), ctypes.byref(tp),
                                              ctypes.byref(applied), ctypes.byref(why)))
            self.profile_applied = bool(applied.value)
            self.profile_why = _lib.take_string(why) or ""
        h = ctypes.c_void_p()
        check(lib.ember_tts_load(path_arg(self.path), ctypes.byref(tp), ctypes.byref(h)))
        self._h = h

    _free = "ember_tts_free"

    @property
    def sample_rate(self):
        """Samples per second (24000)."""
        return lib.ember_tts_sample_rate(self._h)

    def cancel(self):
        """Stops the request being spoken at its next chunk (any thread)."""
        lib.ember_tts_cancel(self._h)

    def _speak(self, push, text, speaker, language, seed, greedy, max_frames, chunks, instruct):
        rq = lib.ember_speech_default_request()
        keep = [enc(text), enc(speaker), enc(language), enc(chunks), enc(instruct)]
        rq.text, rq.speaker, rq.language, rq.chunks, rq.instruct = keep
        rq.seed = int(seed)
        rq.greedy = 1 if greedy else 0
        rq.max_frames = int(max_frames or 0)
        errors = []

        def on_s16(_user, pcm, n, info):
            try:
                if _np is not None:
                    samples = _np.ctypeslib.as_array(pcm, shape=(n,)).copy() if n else _np.zeros(0, _np.int16)
                else:
                    samples = array.array("h", ctypes.string_at(pcm, 2 * n))
                push(Chunk(info.contents, samples))
                return 0
            except BaseException as e:  # an exception cannot cross C: stop and re-raise
                errors.append(e)
                return 1

        cb = _lib.PCM_S16_FN(on_s16)
        timings = _lib.SpeechTimings()
        status = lib.ember_tts_speak(self._h, ctypes.byref(rq), _lib.PCM_F32_FN(), cb, None,
                                     ctypes.byref(timings))
        result = {k: getattr(timings, k) for k in _TIMING_KEYS}
        if errors:
            raise errors[0]
        if status == _lib.ERR_CANCELLED:
            e = _lib.error(status)
            e.partial = result
            raise e
        check(status)
        return result

    def stream(self, text, speaker=None, language=None, seed=0, greedy=False, max_frames=0,
               chunks=None, instruct=None):
        """Speaks text; a generator of Chunks, each the moment the decoder
        has it. speaker: one of the checkpoint's ("ryan") or None; language:
        "english", ..., None for auto; chunks: frames per chunk, "2,4,8,16,25"
        (the last repeats); instruct: how to speak (1.7B CustomVoice), or the
        voice itself (VoiceDesign). Leaving the loop early cancels the
        request; the Stream's result holds the timings (dict, ms)."""
        return Stream(lambda push: self._speak(push, text, speaker, language, seed, greedy,
                                               max_frames, chunks, instruct), self.cancel)

    def speak(self, text, wav=None, **request):
        """Speaks text and returns the Audio (all samples, chunk info,
        timings); with wav, also writes it to that path as it streams.
        Options as stream()."""
        audio = Audio(self.sample_rate)
        writer = WavWriter(wav, audio.sample_rate) if wav else None
        try:
            s = self.stream(text, **request)
            for chunk in s:
                if writer:
                    writer.write(chunk.pcm)
                audio.pcm.extend(array.array("h", _s16_bytes(chunk.pcm)) if _np is not None
                                 else chunk.pcm)
                chunk.pcm = None
                audio.chunks.append(chunk)
            audio.timings = s.result or {}
            audio.cancelled = s.cancelled
        finally:
            if writer:
                writer.close()
        return audio
