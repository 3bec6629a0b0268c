"""Text: Model, Tokenizer, ChatTemplate, Session and Chat.

    import ember
    model = ember.Model("models/tiny")                 # the derived profile applied
    ids = model.tokenizer.encode("Hello")
    chat = model.chat(system="Be brief.", tools=[WEATHER_TOOL])
    for event in chat.stream("Weather in Paris?", max_tokens=64):
        if event.kind == "content":
            print(event.text, end="", flush=True)
        elif event.kind == "tool_call":
            chat.add_tool_result(event.id, get_weather(**event.args))
"""

import ctypes
import json
import os
import threading

from . import _lib
from ._lib import check, enc, lib, path_arg, take_string
from ._stream import Stream

try:  # numpy is optional: logits come back as a list without it
    import numpy as _np
except ImportError:  # pragma: no cover
    _np = None

FINISH = {0: "", 1: "stop", 2: "length", 3: "tool_calls", 4: "cancelled"}
_KINDS = {0: "content", 1: "reasoning"}


class Event:
    """One streamed event of a reply.

    kind: "content" or "reasoning" (text holds the delta: whole UTF-8
    characters), or "tool_call" (id, name, arguments as JSON text and args
    parsed into a dict; text is "").
    """

    __slots__ = ("kind", "text", "id", "name", "arguments")

    def __init__(self, kind, text="", id=None, name=None, arguments=None):
        self.kind, self.text, self.id, self.name, self.arguments = kind, text, id, name, arguments

    @property
    def args(self):
        """The tool call's arguments as a dict ({} when they are not a JSON object)."""
        try:
            value = json.loads(self.arguments or "{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    def __repr__(self):
        if self.kind == "tool_call":
            return "Event(tool_call %s %s(%s))" % (self.id, self.name, self.arguments)
        return "Event(%s %r)" % (self.kind, self.text)


class Reply:
    """A finished reply: content, reasoning, tool_calls (Events), finish
    ("stop", "length", "tool_calls", "cancelled") and usage/timings."""

    def __init__(self):
        self.content = ""
        self.reasoning = ""
        self.tool_calls = []
        self.ids = []
        self.finish = ""
        self.usage = {}
        self.timings = {}

    def _add(self, event):
        if event.kind == "content":
            self.content += event.text
        elif event.kind == "reasoning":
            self.reasoning += event.text
        else:
            self.tool_calls.append(event)

    def _finish(self, res):
        self.finish = FINISH.get(res.finish, "")
        self.usage = {"prompt_tokens": res.prompt_tokens, "cached_tokens": res.cached_tokens,
                      "completion_tokens": res.completion_tokens, "tool_calls": res.tool_calls}
        self.timings = {"prefill_ms": res.prefill_ms, "first_token_ms": res.first_token_ms,
                        "decode_ms": res.decode_ms, "total_ms": res.total_ms}
        self.speculation = {"verify_steps": res.verify_steps, "drafted_tokens": res.drafted_tokens,
                            "accepted_tokens": res.accepted_tokens,
                            "draft_prefill_tokens": res.draft_prefill_tokens}

    def __repr__(self):
        return "Reply(finish=%r, content=%r, tool_calls=%r)" % (self.finish, self.content,
                                                                self.tool_calls)


# ---- generation parameters -------------------------------------------------------

_GEN_KEYS = {"temperature", "top_k", "top_p", "min_p", "repetition_penalty", "presence_penalty",
             "frequency_penalty", "seed", "max_tokens", "stop", "stop_ids", "tool_choice",
             "parse_tools", "greedy", "logit_bias", "speculate", "draft_max"}
_SPECULATE = {None: 0, "none": 0, "ngram": 1}  # ember_speculate


def _is_model(path):
    """A model directory or a GGUF file: both say the model's end-of-turn ids
    and sampling defaults (a GGUF in its metadata)."""
    if not path:
        return False
    if os.path.isdir(path):
        return True
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"GGUF"
    except OSError:
        return False


class _GenParams:
    """An ember_generate_params and the buffers its pointers point into."""

    def __init__(self, model_dir, kw):
        unknown = set(kw) - _GEN_KEYS
        if unknown:
            raise TypeError("unknown generation option(s): %s" % ", ".join(sorted(unknown)))
        p = lib.ember_generate_default_params()
        if _is_model(model_dir):
            check(lib.ember_generate_params_from_model(path_arg(model_dir), ctypes.byref(p)))
        if kw.get("greedy"):
            p.temperature = 0.0
        for key in ("temperature", "top_p", "min_p", "repetition_penalty", "presence_penalty",
                    "frequency_penalty"):
            if kw.get(key) is not None:
                setattr(p, key, float(kw[key]))
        for key in ("top_k", "seed", "max_tokens"):
            if kw.get(key) is not None:
                setattr(p, key, int(kw[key]))
        if kw.get("parse_tools") is not None:
            p.parse_tools = 1 if kw["parse_tools"] else 0
        if kw.get("speculate") not in _SPECULATE:
            raise ValueError("speculate must be 'ngram' or None, not %r" % (kw["speculate"],))
        p.speculate = _SPECULATE[kw.get("speculate")]
        if kw.get("draft_max") is not None:
            p.draft_max = int(kw["draft_max"])
        self._keep = []
        if kw.get("tool_choice") is not None:
            choice = enc(kw["tool_choice"])
            self._keep.append(choice)
            p.tool_choice = choice
        stop = kw.get("stop")
        if stop:
            if isinstance(stop, str):
                stop = [stop]
            arr = (ctypes.c_char_p * len(stop))(*[enc(s) for s in stop])
            self._keep.append(arr)
            p.stop, p.n_stop = arr, len(stop)
        if kw.get("stop_ids"):
            arr, n = _lib.int32_array(kw["stop_ids"])
            self._keep.append(arr)
            p.stop_ids, p.n_stop_ids = arr, n
        if kw.get("logit_bias"):
            items = list(kw["logit_bias"].items())
            arr = (_lib.LogitBias * len(items))(*[_lib.LogitBias(int(i), float(b)) for i, b in items])
            self._keep.append(arr)
            p.logit_bias, p.n_logit_bias = arr, len(items)
        self.params = p

    def attach(self, push, reply):
        """Sets the callbacks: each event goes to reply and to push (may be None)."""
        errors = []

        def on_text(_user, kind, text, n):
            try:
                event = Event(_KINDS.get(kind, "content"), ctypes.string_at(text, n).decode("utf-8", "replace"))
                reply._add(event)
                if push:
                    push(event)
                return 0
            except BaseException as e:  # an exception cannot cross C: stop and re-raise
                errors.append(e)
                return 1

        def on_tool_call(_user, call):
            try:
                c = call.contents
                event = Event("tool_call", "", c.id.decode(), c.name.decode(),
                              (c.arguments or b"{}").decode("utf-8", "replace"))
                reply._add(event)
                if push:
                    push(event)
                return 0
            except BaseException as e:
                errors.append(e)
                return 1

        self._cb = (_lib.TEXT_FN(on_text), _lib.TOOL_CALL_FN(on_tool_call))
        self.params.on_text, self.params.on_tool_call = self._cb
        return errors


def _finish_call(status, res, reply, errors):
    """Raises what a callback raised, or the call's error; fills reply."""
    reply._finish(res)
    if errors:
        raise errors[0]
    if status == _lib.ERR_CANCELLED:
        e = _lib.error(status)
        e.partial = reply
        raise e
    check(status)
    return reply


# ---- tokenizer and template ------------------------------------------------------------

class Tokenizer(_lib.Handle):
    """A Hugging Face tokenizer (tokenizer.json, or vocab.json + merges.txt).

    Immutable once loaded: any number of threads may use one at once."""

    def __init__(self, path):
        """path: a tokenizer.json file or a model directory holding one."""
        h = ctypes.c_void_p()
        check(lib.ember_tokenizer_load(path_arg(path), ctypes.byref(h)))
        self._h = h

    _free = "ember_tokenizer_free"

    def encode(self, text, add_special=False):
        """The ids of text (str or UTF-8 bytes); add_special adds the
        post-processor's special tokens, as Hugging Face's add_special_tokens."""
        data = enc(text)
        ids = ctypes.POINTER(ctypes.c_int32)()
        n = ctypes.c_size_t()
        check(lib.ember_tokenizer_encode(self._h, data, len(data), 1 if add_special else 0,
                                         ctypes.byref(ids), ctypes.byref(n)))
        try:
            return ids[:n.value] if n.value else []
        finally:
            lib.ember_free(ids)

    def decode(self, ids, skip_special=False):
        """The text of ids (bytes that are not UTF-8 come back as U+FFFD)."""
        arr, n = _lib.int32_array(ids)
        text = ctypes.c_void_p()
        check(lib.ember_tokenizer_decode(self._h, arr, n, 1 if skip_special else 0,
                                         ctypes.byref(text), None))
        return take_string(text)

    @property
    def vocab_size(self):
        return lib.ember_tokenizer_vocab_size(self._h)

    def piece(self, id):
        """The vocabulary entry of id as stored ("Ġthe"), None for no such id."""
        p = lib.ember_tokenizer_piece(self._h, id)
        return None if p is None else p.decode("utf-8", "replace")

    def find(self, piece):
        """The id of a vocabulary entry, -1 when absent."""
        return lib.ember_tokenizer_find(self._h, enc(piece))

    def is_special(self, id):
        return bool(lib.ember_tokenizer_is_special(self._h, id))

    def end_of_turn_ids(self, model_dir):
        """The ids that end a turn for the model in model_dir (its
        generation_config.json, config.json and tokenizer_config.json)."""
        cap = 64
        arr = (ctypes.c_int32 * cap)()
        n = ctypes.c_size_t()
        check(lib.ember_tokenizer_end_of_turn_ids(self._h, path_arg(model_dir), arr, cap,
                                                  ctypes.byref(n)))
        return arr[:n.value]


class ChatTemplate(_lib.Handle):
    """A model's chat template (Jinja), rendered from OpenAI-style messages."""

    def __init__(self, model_dir=None, source=None, bos=None, eos=None):
        """From a model directory, or from source text (with bos/eos tokens)."""
        h = ctypes.c_void_p()
        if source is not None:
            check(lib.ember_chat_template_from_string(enc(source), enc(bos), enc(eos), ctypes.byref(h)))
        else:
            check(lib.ember_chat_template_load(path_arg(model_dir), ctypes.byref(h)))
        self._h = h

    _free = "ember_chat_template_free"

    def render(self, messages, tools=None, add_generation_prompt=True, enable_thinking=None,
               **extra):
        """The prompt text for messages (a list of dicts, or JSON text) and
        tools (a list of OpenAI tools, or JSON text); extra keyword arguments
        become template variables."""
        p = lib.ember_chat_default_params()
        p.add_generation_prompt = 1 if add_generation_prompt else 0
        if enable_thinking is not None:
            p.enable_thinking = 1 if enable_thinking else 0
        extra_json = enc(json.dumps(extra)) if extra else None
        p.extra_json = extra_json
        msgs = messages if isinstance(messages, (str, bytes)) else json.dumps(messages)
        tools_json = None if tools is None else (tools if isinstance(tools, (str, bytes)) else json.dumps(tools))
        out = ctypes.c_void_p()
        check(lib.ember_chat_template_render(self._h, enc(msgs), enc(tools_json), ctypes.byref(p),
                                             ctypes.byref(out)))
        return take_string(out)


# ---- model and session ----------------------------------------------------------------

class Model(_lib.Handle):
    """A loaded Spark-X2.5 model (a Hugging Face directory or a GGUF file).

    Immutable once loaded: many sessions and chats, on any threads, can use
    one model at once; close them before the model. The derived profile (ember.profile) picks the weight
    format and thread count that the arguments leave open, unless
    profile=False; profile_why says what it chose and why.
    """

    def __init__(self, path, weight_type=None, threads=0, kernels=None, max_context=4096,
                 kv_type=None, prefill_chunk=64, profile=True, hardware=None):
        """weight_type: None (the file's, or the profile's choice), "f32",
        "f16", "bf16", "q8_0", "q4_0"; threads: 0 = the profile's or one per
        CPU; kernels: None or "scalar", "avx2", "avx512", "neon";
        max_context/kv_type/prefill_chunk: what sessions of this model get;
        hardware: a hardware profile (JSON or a path) replacing the probe."""
        self.path = os.fspath(path)
        mp = lib.ember_model_default_params()
        sp = lib.ember_session_default_params()
        mp.weight_type = _lib.type_code(weight_type)
        self._kernels = enc(kernels)
        mp.kernels = self._kernels
        sp.n_threads = int(threads)
        sp.max_context = int(max_context)
        sp.prefill_chunk = int(prefill_chunk)
        if kv_type is not None:
            sp.kv_type = _lib.type_code(kv_type)
        self.profile_applied = False
        self.profile_why = ""
        if profile:
            pp = lib.ember_profile_default_params()
            hw = enc(hardware)
            pp.hardware = hw
            applied = ctypes.c_int()
            why = ctypes.c_void_p()
            check(lib.ember_profile_apply(path_arg(self.path), ctypes.byref(pp), ctypes.byref(mp),
                                          ctypes.byref(sp), ctypes.byref(applied), ctypes.byref(why)))
            self.profile_applied = bool(applied.value)
            self.profile_why = take_string(why) or ""
        h = ctypes.c_void_p()
        check(lib.ember_model_load(path_arg(self.path), ctypes.byref(mp), ctypes.byref(h)))
        self._h = h
        sp.max_context = min(sp.max_context, lib.ember_model_max_positions(h))
        self.session_params = sp
        self.weight_type = _lib.TYPE_NAMES.get(mp.weight_type)
        self._lock = threading.Lock()
        self._tokenizer = None
        self._template = None

    _free = "ember_model_free"

    @property
    def tokenizer(self):
        """The model's Tokenizer (loaded on first use)."""
        with self._lock:
            if self._tokenizer is None:
                self._tokenizer = Tokenizer(self.path)
            return self._tokenizer

    @property
    def chat_template(self):
        """The model's ChatTemplate (loaded on first use)."""
        with self._lock:
            if self._template is None:
                self._template = ChatTemplate(self.path)
            return self._template

    vocab_size = property(lambda self: lib.ember_model_vocab_size(self._h))
    n_layers = property(lambda self: lib.ember_model_n_layers(self._h))
    max_positions = property(lambda self: lib.ember_model_max_positions(self._h))
    kernels = property(lambda self: lib.ember_model_kernels(self._h).decode())
    weight_bytes = property(lambda self: lib.ember_model_weight_bytes(self._h))

    def session(self, max_context=None, threads=None):
        """A new Session (its own KV cache) with the model's session settings."""
        return Session(self, max_context, threads)

    def chat(self, system=None, tools=None, enable_thinking=None, max_context=None, threads=None):
        """A new Chat over this model, its tokenizer and its chat template."""
        return Chat(self, system=system, tools=tools, enable_thinking=enable_thinking,
                    max_context=max_context, threads=threads)

    def generate(self, prompt, add_special=False, **gen):
        """A completion of prompt (text, or a list of ids) in a fresh session:
        returns a Reply. See Session.generate for the options."""
        s = self.session()
        try:
            return s.generate(prompt, add_special=add_special, **gen)
        finally:
            s.close()


def _session_params(model, max_context, threads):
    sp = _lib.SessionParams.from_buffer_copy(model.session_params)
    if max_context:
        sp.max_context = min(int(max_context), model.max_positions)
    if threads:
        sp.n_threads = int(threads)
    return sp


class Session(_lib.Handle):
    """One sequence's state (KV caches, position) over a Model. One thread
    at a time; cancel() may come from any thread."""

    def __init__(self, model, max_context=None, threads=None):
        self.model = model
        sp = _session_params(model, max_context, threads)
        h = ctypes.c_void_p()
        check(lib.ember_session_create(model._h, ctypes.byref(sp), ctypes.byref(h)))
        self._h = h

    _free = "ember_session_free"

    def prefill(self, ids):
        """Feeds ids after what the session holds."""
        arr, n = _lib.int32_array(ids)
        check(lib.ember_session_prefill(self._h, arr, n))

    def decode(self, id):
        """Feeds one token."""
        check(lib.ember_session_decode(self._h, int(id)))

    def logits(self):
        """A copy of the logits predicting the next token (numpy float32
        array when numpy is installed, else a list); None before any input."""
        p = lib.ember_session_logits(self._h)
        if not p:
            return None
        n = self.model.vocab_size
        if _np is not None:
            return _np.ctypeslib.as_array(p, shape=(n,)).copy()
        return p[:n]

    @property
    def position(self):
        return lib.ember_session_position(self._h)

    def reset(self):
        lib.ember_session_reset(self._h)

    def cancel(self):
        """Stops the generation running on this session (any thread)."""
        lib.ember_session_cancel(self._h)

    def _prompt_ids(self, prompt, add_special):
        if isinstance(prompt, (str, bytes)):
            return self.model.tokenizer.encode(prompt, add_special=add_special)
        return list(prompt)

    def _generate(self, ids, push, gen):
        tok = self.model.tokenizer
        if "stop_ids" not in gen and _is_model(self.model.path):
            gen = dict(gen, stop_ids=tok.end_of_turn_ids(self.model.path))
        gp = _GenParams(self.model.path, gen)
        reply = Reply()
        errors = gp.attach(push, reply)
        arr, n = _lib.int32_array(ids)
        res = _lib.GenerateResult()
        status = lib.ember_session_generate(self._h, tok._h, arr, n, ctypes.byref(gp.params),
                                            ctypes.byref(res))
        return _finish_call(status, res, reply, errors)

    def generate(self, prompt, add_special=False, **gen):
        """Generates after prompt (text or ids) and returns a Reply.

        Options: max_tokens (default 256), temperature, top_k, top_p, min_p,
        repetition_penalty, presence_penalty, frequency_penalty, greedy,
        seed, stop (strings), stop_ids (default: the model's end-of-turn
        ids), logit_bias ({id: bias}), tool_choice, parse_tools,
        speculate ("ngram": prompt lookup, the same ids in fewer passes)
        and draft_max. Sampling defaults come from the model's
        generation_config.json."""
        try:
            return self._generate(self._prompt_ids(prompt, add_special), None, gen)
        except _lib.Cancelled as e:
            return e.partial

    def stream(self, prompt, add_special=False, **gen):
        """Like generate, as a generator of Events (content and reasoning
        deltas, tool calls). Leaving the loop early cancels the generation;
        the Stream's result is the Reply."""
        ids = self._prompt_ids(prompt, add_special)
        return Stream(lambda push: self._generate(ids, push, gen), self.cancel)


class Chat(_lib.Handle):
    """A conversation: messages, the model's chat template and a session
    that keeps its cache across turns, so each reply runs only the new
    tokens. One thread at a time; cancel() may come from any thread.

    tools: a list of OpenAI tools ({"type": "function", "function": {...}}).
    After a reply with tool calls, add each result with add_tool_result()
    and call respond()/stream() again (with no new message).
    """

    def __init__(self, model, system=None, tools=None, enable_thinking=None, max_context=None,
                 threads=None):
        self.model = model
        cp = lib.ember_conversation_default_params()
        cp.session = _session_params(model, max_context, threads)
        self._keep = [enc(system), enc(json.dumps(tools) if tools is not None else None),
                      path_arg(model.path) if _is_model(model.path) else None]
        cp.system, cp.tools_json, cp.model_dir = self._keep
        if enable_thinking is not None:
            cp.enable_thinking = 1 if enable_thinking else 0
        h = ctypes.c_void_p()
        check(lib.ember_conversation_create(model._h, model.tokenizer._h, model.chat_template._h,
                                            ctypes.byref(cp), ctypes.byref(h)))
        self._h = h
        self.last_reply = None

    _free = "ember_conversation_free"

    def add(self, content, role="user"):
        """Appends a message."""
        check(lib.ember_conversation_add(self._h, enc(role), enc(content)))

    def add_tool_result(self, tool_call_id, content):
        """Appends the result (str, or anything json.dumps takes) of a tool
        call the last reply made."""
        if not isinstance(content, str):
            content = json.dumps(content)
        check(lib.ember_conversation_add_tool_result(self._h, enc(tool_call_id), enc(content)))

    def _respond(self, push, gen):
        gp = _GenParams(self.model.path, gen)
        reply = Reply()
        errors = gp.attach(push, reply)
        res = _lib.GenerateResult()
        status = lib.ember_conversation_respond(self._h, ctypes.byref(gp.params), ctypes.byref(res))
        self.last_reply = reply
        return _finish_call(status, res, reply, errors)

    def respond(self, content=None, **gen):
        """Adds content (when given) as the user's message and returns the
        assistant's Reply (also appended to the messages). Options as
        Session.generate; stop_ids default to the model's end-of-turn ids."""
        if content is not None:
            self.add(content)
        try:
            return self._respond(None, gen)
        except _lib.Cancelled as e:
            return e.partial

    def stream(self, content=None, **gen):
        """Like respond, as a generator of Events: content and reasoning
        deltas as they are generated, each tool call once parsed. Breaking
        out of the loop cancels the reply; afterwards last_reply holds it."""
        if content is not None:
            self.add(content)
        return Stream(lambda push: self._respond(push, gen), self.cancel)

    def cancel(self):
        """Stops the reply being generated (any thread)."""
        lib.ember_conversation_cancel(self._h)

    @property
    def messages(self):
        """The messages so far (a list of dicts)."""
        out = ctypes.c_void_p()
        check(lib.ember_conversation_messages(self._h, ctypes.byref(out)))
        return json.loads(take_string(out))

    def clear(self):
        """Drops every message but the system one; the cache is kept."""
        lib.ember_conversation_clear(self._h)

    @property
    def cached_tokens(self):
        return lib.ember_conversation_cached_tokens(self._h)

    def save(self, path):
        """Writes the messages and the cache to a prompt-cache file (atomic)."""
        check(lib.ember_conversation_save(self._h, path_arg(path)))

    def load(self, path):
        """Replaces the messages and the cache with a saved file's."""
        check(lib.ember_conversation_load(self._h, path_arg(path)))
