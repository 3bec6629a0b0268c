"""examples/voice_assistant.py's Speaker on the tiny speech model: a reply
fed delta by delta is spoken sentence by sentence, the first sentence's
audio before the reply has ended. (The tiny text model has random weights
and writes no sentences; tests/e2e/python.sh runs the whole example.)"""
import importlib.util
import os
import tempfile
import threading
import unittest
import wave

import _paths
import ember

spec = importlib.util.spec_from_file_location(
    "voice_assistant", os.path.join(_paths.ROOT, "examples", "voice_assistant.py"))
voice_assistant = importlib.util.module_from_spec(spec)
spec.loader.exec_module(voice_assistant)


class SpeakerTest(unittest.TestCase):
    def test_sentences_are_spoken_as_they_end(self):
        tts = ember.Speech(_paths.TTS, max_frames=12)
        heard = []
        first_chunk = threading.Event()

        def on_chunk(sentence, chunk):
            heard.append(sentence)
            first_chunk.set()

        deltas = ["Hel", "lo there", ". How", " are you? ", "Fine", "!", " And", " you"]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "reply.wav")
            with ember.WavWriter(path, tts.sample_rate) as wav:
                sp = voice_assistant.Speaker(tts, wav, on_chunk=on_chunk)
                for i, delta in enumerate(deltas):
                    sp.feed(delta)
                    if i == 2:  # "Hello there." is complete: it is being spoken now
                        self.assertTrue(first_chunk.wait(30), "no audio for the first sentence")
                        self.assertEqual(heard[0], "Hello there.")
                sp.finish()
            with wave.open(path) as w:
                self.assertEqual(w.getnframes(), wav.samples)
        self.assertEqual(sp.spoken, ["Hello there.", "How are you?", "Fine!", "And you"])
        self.assertGreater(wav.samples, 0)
        self.assertEqual(sorted(set(heard), key=heard.index), sp.spoken)

    def test_nothing_speakable_is_skipped(self):
        tts = ember.Speech(_paths.TTS, max_frames=4)
        with tempfile.TemporaryDirectory() as d:
            with ember.WavWriter(os.path.join(d, "x.wav"), tts.sample_rate) as wav:
                sp = voice_assistant.Speaker(tts, wav)
                sp.feed("\n\n \x00\x18 ...\n")
                sp.finish()
        self.assertEqual(sp.spoken, [])


if __name__ == "__main__":
    unittest.main()
