"""The text bindings on the tiny model: tokenizer, template, generation,
a chat with a tool call, streaming and cancellation, errors as exceptions."""
import os
import tempfile
import threading
import unittest

import _paths  # noqa: F401  (sys.path, model paths)
import ember

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}


class TextTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = ember.Model(_paths.MODEL, max_context=1024)

    def test_tokenizer_round_trip(self):
        tok = self.model.tokenizer
        text = "Hello, world! Ünïcode."
        ids = tok.encode(text)
        self.assertTrue(ids)
        self.assertEqual(tok.decode(ids), text)
        self.assertEqual(tok.find(tok.piece(ids[0])), ids[0])
        self.assertIsNone(tok.piece(-1))
        self.assertGreater(tok.vocab_size, max(ids))
        self.assertIsInstance(tok.end_of_turn_ids(_paths.MODEL), list)

    def test_bad_input_raises_with_the_message(self):
        tok = self.model.tokenizer
        with self.assertRaises(ember.EmberError) as cm:
            tok.decode([tok.vocab_size])
        self.assertIn("outside the vocabulary", str(cm.exception))
        self.assertEqual(cm.exception.status_name, "invalid argument")
        with self.assertRaises(ember.EmberError):
            tok.encode(b"\xff")
        with self.assertRaises(ember.EmberError) as cm:
            ember.Model("no/such/model")
        self.assertIn("no/such/model", str(cm.exception))

    def test_template_renders_tools(self):
        text = self.model.chat_template.render([{"role": "user", "content": "Hi"}], tools=[WEATHER])
        self.assertIn("Hi", text)
        self.assertIn("get_weather", text)

    def test_greedy_generation_is_deterministic(self):
        a = self.model.generate("Hello", max_tokens=6, greedy=True)
        b = self.model.generate("Hello", max_tokens=6, greedy=True)
        self.assertEqual(a.content, b.content)
        self.assertEqual(a.finish, "length")
        self.assertEqual(a.usage["completion_tokens"], 6)

    def test_speculative_generation_gives_the_same_text(self):
        # tiny model, random weights: drafts are mostly rejected, the text must not change
        prompt = "a b c a b c a b c a b"
        plain = self.model.generate(prompt, max_tokens=24, greedy=True)
        spec = self.model.generate(prompt, max_tokens=24, greedy=True, speculate="ngram", draft_max=4)
        self.assertEqual(plain.content, spec.content)
        self.assertGreater(spec.speculation["verify_steps"], 0)
        self.assertEqual(plain.speculation["verify_steps"], 0)
        with self.assertRaises(ValueError):
            self.model.generate(prompt, speculate="medusa")

    def test_session_logits(self):
        s = self.model.session(max_context=64)
        self.assertIsNone(s.logits())
        s.prefill(self.model.tokenizer.encode("Hi"))
        logits = s.logits()
        self.assertEqual(len(logits), self.model.vocab_size)
        s.decode(1)
        self.assertEqual(s.position, len(self.model.tokenizer.encode("Hi")) + 1)
        s.close()

    def test_chat_streams_deltas_and_a_tool_call(self):
        chat = self.model.chat(system="Use tools.", tools=[WEATHER])
        events = list(chat.stream("Weather in Paris?", tool_choice="get_weather", max_tokens=48))
        calls = [e for e in events if e.kind == "tool_call"]
        self.assertEqual(len(calls), 1, events)
        self.assertEqual(calls[0].name, "get_weather")
        # the random-weight model may run out of tokens inside the arguments
        self.assertIn(chat.last_reply.finish, ("tool_calls", "length"))
        chat.add_tool_result(calls[0].id, {"temp_c": 21})
        reply = chat.respond(max_tokens=8, greedy=True)
        self.assertIn(reply.finish, ("stop", "length"))
        roles = [m["role"] for m in chat.messages]
        self.assertEqual(roles, ["system", "user", "assistant", "tool", "assistant"])
        chat.close()

    def test_chat_reuses_its_cache(self):
        chat = self.model.chat()
        chat.respond("Hi", max_tokens=4, greedy=True, stop_ids=[])
        n = chat.cached_tokens
        self.assertGreater(n, 0)
        chat.close()

    def test_chat_saved_and_loaded(self):
        a = self.model.chat()
        a.respond("Hi", max_tokens=4, greedy=True, stop_ids=[])
        with tempfile.TemporaryDirectory() as d:
            a.save(os.path.join(d, "chat.ekv"))
            b = self.model.chat()
            b.load(os.path.join(d, "chat.ekv"))
            with self.assertRaises(ember.EmberError):
                b.load(os.path.join(d, "missing"))
        self.assertEqual(b.messages, a.messages)
        self.assertEqual(b.cached_tokens, a.cached_tokens)
        a.close()
        b.close()

    def test_breaking_out_of_a_stream_cancels(self):
        chat = self.model.chat()
        got = 0
        for _ in chat.stream("Tell me a story", max_tokens=200, stop_ids=[]):
            got += 1
            if got == 3:
                break
        self.assertEqual(chat.last_reply.finish, "cancelled")
        self.assertLess(chat.last_reply.usage["completion_tokens"], 200)

    def test_cancel_from_another_thread(self):
        chat = self.model.chat()
        stream = chat.stream("Count to a thousand", max_tokens=400, stop_ids=[])
        first = threading.Event()
        n = 0
        for _ in stream:
            n += 1
            if n == 1:
                threading.Thread(target=chat.cancel).start()
                first.set()
        self.assertTrue(first.is_set())
        self.assertTrue(stream.cancelled)
        self.assertLess(stream.result.usage["completion_tokens"], 400)

    def test_callback_exception_propagates(self):
        chat = self.model.chat()

        class Boom(Exception):
            pass

        with self.assertRaises(Boom):
            for _ in chat.stream("Hi", max_tokens=20, stop_ids=[]):
                raise Boom()


class InfoTest(unittest.TestCase):
    def test_version_build_info_and_profile(self):
        self.assertRegex(ember.version(), r"^\d+\.\d+\.\d+$")
        info = ember.build_info()
        self.assertIn(info["kernels_default"], info["kernels_runnable"])
        hw = ember.hardware()
        self.assertIn("class", hw)
        d = ember.derive(_paths.MODEL)
        self.assertEqual(d["model"]["kind"], "llm")
        self.assertIn("why", d["profile"])


if __name__ == "__main__":
    unittest.main()
