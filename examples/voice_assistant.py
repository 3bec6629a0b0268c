#!/usr/bin/env python3
"""A voice assistant: each reply is spoken while it is being generated.

    voice_assistant.py MODEL_DIR TTS_DIR OUT.wav [QUESTION ...]

The chat streams text deltas; a Speaker cuts them into sentences and hands
each finished sentence to a speech thread, which streams its audio chunks
into one WAV file. So the first sentence is heard while the model is still
writing the second. With no QUESTION it reads questions from stdin, one a
line. Needs only the ember package (python/) and libember.so.
"""
import argparse
import queue
import re
import sys
import threading
import time

import ember

_END = re.compile(r"[.!?。！？]+[\"')\]]*(\s+|$)|\n\s*")


class Speaker:
    """Feed it text deltas; it speaks each sentence as soon as it ends."""

    def __init__(self, tts, wav, speaker=None, language=None, on_chunk=None):
        self.tts, self.wav, self.voice, self.language = tts, wav, speaker, language
        self.on_chunk = on_chunk  # called (sentence, chunk) on the speech thread
        self.pending = ""
        self.spoken = []
        self.first_audio = None
        self.error = None
        self._queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def feed(self, text):
        """Adds a delta; every sentence it completes goes to the speech thread."""
        self.pending += text
        while True:
            m = _END.search(self.pending)
            if not m:
                return
            self._say(self.pending[:m.end()])
            self.pending = self.pending[m.end():]

    def finish(self):
        """Speaks what is left and waits until everything has been spoken."""
        self._say(self.pending)
        self.pending = ""
        self._queue.put(None)
        self._thread.join()
        if self.error:
            raise self.error

    def _say(self, sentence):
        sentence = " ".join(sentence.split())
        if any(c.isalnum() for c in sentence):  # nothing to say aloud otherwise
            self._queue.put(sentence)

    def _run(self):
        while True:
            sentence = self._queue.get()
            if sentence is None:
                return
            try:
                for chunk in self.tts.stream(sentence, speaker=self.voice, language=self.language):
                    if self.first_audio is None:
                        self.first_audio = time.monotonic()
                    self.wav.write(chunk.pcm)
                    if self.on_chunk:
                        self.on_chunk(sentence, chunk)
                self.spoken.append(sentence)
            except ember.EmberError as e:  # keep draining; report at finish()
                self.error = self.error or e


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("tts")
    ap.add_argument("wav")
    ap.add_argument("question", nargs="*")
    ap.add_argument("--speaker")
    ap.add_argument("--language")
    ap.add_argument("--max-tokens", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    model = ember.Model(args.model)
    tts = ember.Speech(args.tts)
    chat = model.chat(system="You are a voice assistant. Answer in short spoken sentences.")
    questions = [" ".join(args.question)] if args.question else (l.strip() for l in sys.stdin)
    with ember.WavWriter(args.wav, tts.sample_rate) as wav:
        for question in questions:
            if not question:
                continue
            t0 = time.monotonic()
            speaker = Speaker(tts, wav, args.speaker, args.language)
            print("> " + question)
            for event in chat.stream(question, max_tokens=args.max_tokens, seed=args.seed):
                if event.kind == "content":
                    print(event.text, end="", flush=True)
                    speaker.feed(event.text)
            speaker.finish()
            reply = chat.last_reply
            first = "%.0f ms" % (1e3 * (speaker.first_audio - t0)) if speaker.first_audio else "none"
            print("\n[%s: %d tokens, %d sentences spoken, first audio %s]"
                  % (reply.finish, reply.usage["completion_tokens"], len(speaker.spoken), first))
        print("%s: %.2f s of audio" % (args.wav, wav.samples / tts.sample_rate))


if __name__ == "__main__":
    main()
