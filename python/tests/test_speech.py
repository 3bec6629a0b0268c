"""The speech bindings on the tiny Qwen3-TTS model: streamed chunks, a WAV
written with the wave module, cancellation, errors."""
import os
import tempfile
import unittest
import wave

import _paths  # noqa: F401
import ember


class SpeechTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tts = ember.Speech(_paths.TTS)

    def test_stream_chunks_in_order(self):
        s = self.tts.stream("Hello there.", max_frames=12, seed=1)
        chunks = list(s)
        self.assertTrue(chunks)
        self.assertEqual([c.index for c in chunks], list(range(len(chunks))))
        frames = sum(c.n_frames for c in chunks)
        self.assertEqual(frames, s.result["frames"])
        self.assertEqual(sum(len(c.pcm) for c in chunks), frames * self.tts.sample_rate * 80 // 1000)
        self.assertGreater(s.result["first_audio_ms"], 0)

    def test_speak_writes_a_wav(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out.wav")
            audio = self.tts.speak("Hi.", wav=path, max_frames=10, seed=2)
            with wave.open(path) as w:
                self.assertEqual(w.getframerate(), 24000)
                self.assertEqual(w.getnchannels(), 1)
                self.assertEqual(w.getnframes(), len(audio.pcm))
        self.assertGreater(len(audio.pcm), 0)
        self.assertFalse(audio.cancelled)

    def test_same_seed_same_audio(self):
        a = self.tts.speak("Same.", max_frames=6, seed=5)
        b = self.tts.speak("Same.", max_frames=6, seed=5)
        self.assertEqual(list(a.pcm), list(b.pcm))

    def test_leaving_the_loop_cancels(self):
        s = self.tts.stream("A longer sentence to speak here.", chunks="2", max_frames=60)
        for _ in s:
            break
        self.assertTrue(s.cancelled)
        # the stream is usable again afterwards
        self.assertGreater(len(self.tts.speak("Ok.", max_frames=4).pcm), 0)

    def test_bad_request_raises(self):
        with self.assertRaises(ember.EmberError) as cm:
            list(self.tts.stream("Hi.", speaker="nobody-by-this-name"))
        self.assertIn("nobody-by-this-name", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
