"""The ctypes layer: finding libember.so, the C structs, the prototypes.

Nothing here is public API; the classes in ember.text, ember.speech and
ember.profile wrap it. The structs mirror include/ember*.h field for field.
"""

import ctypes
import ctypes.util
import os

from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_double, c_float, c_int, c_int16,
                    c_int32, c_size_t, c_uint64, c_void_p)

# ember_status
OK = 0
_STATUS_NAMES = {
    1: "invalid argument", 2: "i/o error", 3: "format error", 4: "unsupported",
    5: "out of memory", 6: "context full", 7: "cancelled",
}
ERR_CANCELLED = 7

# ember_type
TYPES = {None: 0, "none": 0, "f32": 1, "f16": 2, "bf16": 3, "q8_0": 4, "q4_0": 5, "q2_k": 6, "q3_k": 7,
         "q4_k": 8, "q5_k": 9, "q6_k": 10, "iq4_nl": 11, "iq4_xs": 12,
         "q4_1": 13, "q5_0": 14, "q5_1": 15}
TYPE_NAMES = {v: k for k, v in TYPES.items() if k}


class EmberError(Exception):
    """A call into libember failed.

    ``status`` is the ember_status number, ``status_name`` its short name
    ("format error", ...) and the message is ember_last_error(): what failed
    and which file, tensor, key or argument was at fault.
    """

    def __init__(self, status, message):
        self.status = status
        self.status_name = _STATUS_NAMES.get(status, "unknown status")
        super().__init__(message or self.status_name)


class Cancelled(EmberError):
    """A generation or a speech request was cancelled (by cancel() or by a
    callback); what was produced until then stays available."""


def _candidates():
    env = os.environ.get("EMBER_LIBRARY")
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("libember.so", "libember.so.0"):
        yield os.path.join(here, name)
    # a source checkout: python/ember/ -> build/libember.so
    yield os.path.join(os.path.dirname(os.path.dirname(here)), "build", "libember.so")
    found = ctypes.util.find_library("ember")
    if found:
        yield found
    yield "libember.so.0"


def _load():
    errors = []
    env = os.environ.get("EMBER_LIBRARY")
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            if path == env:
                raise OSError("EMBER_LIBRARY=%s: no such file" % env)
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            if path == env:
                raise OSError("EMBER_LIBRARY=%s: %s" % (env, e)) from None
            errors.append(str(e))
    raise OSError("libember.so not found: set EMBER_LIBRARY, put it next to the ember package, "
                  "build it (make) in a source checkout, or install it (make install); tried: "
                  + "; ".join(errors))


lib = _load()


# ---- structs ----------------------------------------------------------------

class ModelParams(Structure):
    _fields_ = [("gelu", c_int), ("weight_type", c_int), ("kernels", c_char_p),
                ("all_full_attention", c_int), ("backend", c_char_p), ("onnx_runtime", c_char_p),
                ("onnx_provider", c_char_p), ("onnx_options", c_char_p)]


class SessionParams(Structure):
    _fields_ = [("max_context", c_int32), ("prefill_chunk", c_int32), ("n_threads", c_int32),
                ("kv_type", c_int)]


class ChatParams(Structure):
    _fields_ = [("add_generation_prompt", c_int), ("enable_thinking", c_int),
                ("extra_json", c_char_p)]


class ToolCall(Structure):
    _fields_ = [("id", c_char_p), ("name", c_char_p), ("arguments", c_char_p)]


class LogitBias(Structure):
    _fields_ = [("id", c_int32), ("bias", c_float)]


TEXT_FN = CFUNCTYPE(c_int, c_void_p, c_int, POINTER(ctypes.c_char), c_size_t)
TOOL_CALL_FN = CFUNCTYPE(c_int, c_void_p, POINTER(ToolCall))
TOKEN_FN = CFUNCTYPE(c_int, c_void_p, c_int32)


class GenerateParams(Structure):
    _fields_ = [
        ("temperature", c_float), ("top_k", c_int32), ("top_p", c_float), ("min_p", c_float),
        ("repetition_penalty", c_float), ("presence_penalty", c_float),
        ("frequency_penalty", c_float),
        ("logit_bias", POINTER(LogitBias)), ("n_logit_bias", c_size_t),
        ("seed", c_uint64), ("max_tokens", c_int32),
        ("stop", POINTER(c_char_p)), ("n_stop", c_size_t),
        ("stop_ids", POINTER(c_int32)), ("n_stop_ids", c_size_t),
        ("parse_tools", c_int), ("tool_choice", c_char_p),
        ("tool_names", POINTER(c_char_p)), ("n_tool_names", c_size_t),
        ("on_text", TEXT_FN), ("on_tool_call", TOOL_CALL_FN), ("user", c_void_p),
        ("stats", c_void_p), ("on_token", TOKEN_FN),
        ("speculate", c_int), ("draft_max", c_int32), ("draft_model", c_void_p),
    ]


class GenerateResult(Structure):
    _fields_ = [("finish", c_int), ("prompt_tokens", c_int32), ("cached_tokens", c_int32),
                ("completion_tokens", c_int32), ("tool_calls", c_int32),
                ("prefill_ms", c_double), ("first_token_ms", c_double), ("decode_ms", c_double),
                ("total_ms", c_double), ("verify_steps", c_int32), ("drafted_tokens", c_int32),
                ("accepted_tokens", c_int32), ("draft_prefill_tokens", c_int32)]


class ConversationParams(Structure):
    _fields_ = [("session", SessionParams), ("system", c_char_p), ("tools_json", c_char_p),
                ("enable_thinking", c_int), ("model_dir", c_char_p)]


class TtsParams(Structure):
    _fields_ = [("weight_type", c_int), ("decoder_type", c_int), ("kernels", c_char_p),
                ("n_threads", c_int32), ("decoder_threads", c_int32), ("max_frames", c_int32),
                ("max_text_tokens", c_int32), ("alone_chunks", c_int32),
                ("generator_cpus", c_int32 * 256), ("n_generator_cpus", c_int32),
                ("decoder_cpus", c_int32 * 256), ("n_decoder_cpus", c_int32),
                ("warm_up", c_int), ("calibration", c_int), ("codes_only", c_int),
                ("backend", c_char_p), ("onnx_runtime", c_char_p),
                ("onnx_provider", c_char_p), ("onnx_options", c_char_p)]


class SpeechRequest(Structure):
    _fields_ = [("text", c_char_p), ("speaker", c_char_p), ("language", c_char_p),
                ("seed", c_uint64), ("greedy", c_int), ("max_frames", c_int32),
                ("min_frames", c_int32), ("chunks", c_char_p),
                ("text_ids", POINTER(c_int32)), ("n_text_ids", c_size_t),
                ("streaming_text", c_int), ("temperature", c_float), ("top_k", c_int32),
                ("top_p", c_float), ("repetition_penalty", c_float), ("stats", c_void_p),
                ("instruct", c_char_p), ("xvector", POINTER(c_float)), ("n_xvector", c_int32),
                ("voice", c_void_p), ("ref_text", c_char_p), ("ref_codes", POINTER(c_int32)),
                ("n_ref_frames", c_int32), ("xvector_only", c_int)]


class SpeechChunk(Structure):
    _fields_ = [("index", c_int32), ("first_frame", c_int32), ("n_frames", c_int32),
                ("ready_ms", c_double), ("decode_ms", c_double)]


class SpeechTimings(Structure):
    _fields_ = [("frames", c_int32), ("chunks", c_int32), ("prefill_ms", c_double),
                ("talker_ms", c_double), ("predictor_ms", c_double), ("decoder_ms", c_double),
                ("first_audio_ms", c_double), ("total_ms", c_double),
                ("prompt_tokens", c_int32), ("stopped_at_eos", c_int)]


PCM_F32_FN = CFUNCTYPE(c_int, c_void_p, POINTER(c_float), c_size_t, POINTER(SpeechChunk))
PCM_S16_FN = CFUNCTYPE(c_int, c_void_p, POINTER(c_int16), c_size_t, POINTER(SpeechChunk))


class ProfileParams(Structure):
    _fields_ = [("root", c_char_p), ("hardware", c_char_p), ("context", c_int32),
                ("kv_type", c_int), ("prefill_chunk", c_int32)]


# ---- prototypes ---------------------------------------------------------------

_h = c_void_p  # every handle is opaque
_out = POINTER(c_void_p)
_S = c_int

_PROTOS = {
    "ember_status_name": (c_char_p, [c_int]),
    "ember_last_error": (c_char_p, []),
    "ember_free": (None, [c_void_p]),
    "ember_version_string": (c_char_p, []),
    "ember_build_info": (_S, [_out]),
    # model and session
    "ember_model_default_params": (ModelParams, []),
    "ember_model_load": (_S, [c_char_p, POINTER(ModelParams), _out]),
    "ember_model_free": (None, [_h]),
    "ember_model_vocab_size": (c_int32, [_h]),
    "ember_model_n_layers": (c_int32, [_h]),
    "ember_model_max_positions": (c_int32, [_h]),
    "ember_model_kernels": (c_char_p, [_h]),
    "ember_model_weight_bytes": (c_size_t, [_h]),
    "ember_session_default_params": (SessionParams, []),
    "ember_session_create": (_S, [_h, POINTER(SessionParams), _out]),
    "ember_session_free": (None, [_h]),
    "ember_session_prefill": (_S, [_h, POINTER(c_int32), c_size_t]),
    "ember_session_decode": (_S, [_h, c_int32]),
    "ember_session_logits": (POINTER(c_float), [_h]),
    "ember_session_position": (c_int32, [_h]),
    "ember_session_reset": (None, [_h]),
    "ember_session_cancel": (None, [_h]),
    "ember_session_set_stats": (None, [_h, _h]),
    # tokenizer
    "ember_tokenizer_load": (_S, [c_char_p, _out]),
    "ember_tokenizer_free": (None, [_h]),
    "ember_tokenizer_encode": (_S, [_h, c_char_p, c_size_t, c_int, POINTER(POINTER(c_int32)),
                                    POINTER(c_size_t)]),
    "ember_tokenizer_decode": (_S, [_h, POINTER(c_int32), c_size_t, c_int, _out,
                                    POINTER(c_size_t)]),
    "ember_tokenizer_vocab_size": (c_int32, [_h]),
    "ember_tokenizer_piece": (c_char_p, [_h, c_int32]),
    "ember_tokenizer_find": (c_int32, [_h, c_char_p]),
    "ember_tokenizer_is_special": (c_int, [_h, c_int32]),
    "ember_tokenizer_end_of_turn_ids": (_S, [_h, c_char_p, POINTER(c_int32), c_size_t,
                                             POINTER(c_size_t)]),
    # chat template
    "ember_chat_template_load": (_S, [c_char_p, _out]),
    "ember_chat_template_from_string": (_S, [c_char_p, c_char_p, c_char_p, _out]),
    "ember_chat_template_free": (None, [_h]),
    "ember_chat_default_params": (ChatParams, []),
    "ember_chat_template_render": (_S, [_h, c_char_p, c_char_p, POINTER(ChatParams), _out]),
    # generation
    "ember_generate_default_params": (GenerateParams, []),
    "ember_generate_params_from_model": (_S, [c_char_p, POINTER(GenerateParams)]),
    "ember_session_generate": (_S, [_h, _h, POINTER(c_int32), c_size_t, POINTER(GenerateParams),
                                    POINTER(GenerateResult)]),
    "ember_finish_name": (c_char_p, [c_int]),
    # conversation
    "ember_conversation_default_params": (ConversationParams, []),
    "ember_conversation_create": (_S, [_h, _h, _h, POINTER(ConversationParams), _out]),
    "ember_conversation_free": (None, [_h]),
    "ember_conversation_add": (_S, [_h, c_char_p, c_char_p]),
    "ember_conversation_add_tool_result": (_S, [_h, c_char_p, c_char_p]),
    "ember_conversation_respond": (_S, [_h, POINTER(GenerateParams), POINTER(GenerateResult)]),
    "ember_conversation_messages": (_S, [_h, _out]),
    "ember_conversation_clear": (None, [_h]),
    "ember_conversation_cached_tokens": (c_int32, [_h]),
    "ember_conversation_cancel": (None, [_h]),
    "ember_conversation_save": (_S, [_h, c_char_p]),
    "ember_conversation_load": (_S, [_h, c_char_p]),
    # speech
    "ember_tts_default_params": (TtsParams, []),
    "ember_tts_load": (_S, [c_char_p, POINTER(TtsParams), _out]),
    "ember_tts_free": (None, [_h]),
    "ember_tts_sample_rate": (c_int32, [_h]),
    "ember_speech_default_request": (SpeechRequest, []),
    "ember_tts_speak": (_S, [_h, POINTER(SpeechRequest), PCM_F32_FN, PCM_S16_FN, c_void_p,
                             POINTER(SpeechTimings)]),
    "ember_tts_cancel": (None, [_h]),
    "ember_tts_codebooks": (c_int32, [_h]),
    "ember_tts_info": (_S, [_h, _out]),
    # statistics
    "ember_stats_create": (_S, [c_char_p, _out]),
    "ember_stats_free": (None, [_h]),
    "ember_stats_json": (_S, [_h, _out]),
    "ember_stats_write_json": (_S, [_h, c_char_p]),
    # probe and profile
    "ember_profile_default_params": (ProfileParams, []),
    "ember_hardware_probe": (_S, [POINTER(ProfileParams), _out]),
    "ember_profile_derive": (_S, [c_char_p, POINTER(ProfileParams), _out]),
    "ember_profile_apply": (_S, [c_char_p, POINTER(ProfileParams), POINTER(ModelParams),
                                 POINTER(SessionParams), POINTER(c_int), _out]),
    "ember_profile_apply_tts": (_S, [c_char_p, POINTER(ProfileParams), POINTER(TtsParams),
                                     POINTER(c_int), _out]),
}

for _name, (_res, _args) in _PROTOS.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args


# ---- helpers ----------------------------------------------------------------------

def enc(s):
    """str -> UTF-8 bytes for a const char * (None stays None)."""
    if s is None:
        return None
    if isinstance(s, bytes):
        return s
    return str(s).encode("utf-8")


def path_arg(p):
    return None if p is None else os.fsencode(p)


def error(status):
    """The exception for a failed status, with this thread's ember_last_error()."""
    msg = lib.ember_last_error()
    msg = msg.decode("utf-8", "replace") if msg else ""
    cls = Cancelled if status == ERR_CANCELLED else EmberError
    return cls(status, msg)


def check(status):
    if status != OK:
        raise error(status)


def take_string(ptr):
    """A char * the library handed out (ember_free'd here) -> str."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        lib.ember_free(ptr)


def type_code(name):
    """"q8_0" -> EMBER_TYPE_Q8_0; None -> NONE."""
    key = name.lower() if isinstance(name, str) else name
    if key not in TYPES:
        raise ValueError("weight type %r: one of " + ", ".join(k for k in TYPES if k and k != "none") % (name,))
    return TYPES[key]


def int32_array(values):
    values = list(values)
    return (c_int32 * max(1, len(values)))(*values), len(values)


class Handle:
    """An owned C object: self._h is its pointer and _free names the C call
    that frees it. close() frees it once; garbage collection and the end of a
    `with` block close it too."""

    _free = None

    def close(self):
        h = getattr(self, "_h", None)
        if h:
            self._h = None
            getattr(lib, self._free)(h)

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
