"""Spark-X2.5 chat rendering in plain Python, equal byte for byte to
reference/spark_chat_template.jinja as ember renders it (`ember template`);
reference/demo/check_render.py checks that on generated conversations.

    render(messages, tools=None, add_generation_prompt=False, enable_thinking=None) -> str
    render_with_spans(messages, tools=None, add_generation_prompt=False, enable_thinking=None, arg_spans=None)
        -> (str, [(start, end), ...])   character spans of the assistant turns
                                         (and, into arg_spans, of their call arguments)
    tojson(value) -> str                 the template's `tojson`

Messages and tools are the OpenAI-style dicts the template takes:
{"role": "system"|"user"|"assistant"|"tool", "content": str,
 "tool_calls": [{"type": "function", "function": {"name": str, "arguments": dict or str}}],
 "reasoning_content": str (optional)}.
"""
import json
import math

TOOLS_HEAD = ("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
              "You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
TOOLS_TAIL = ("\n</tools>\n\nFor each function call, return a json object with function name and arguments "
              "within <tool_call></tool_call> XML tags:\n"
              "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n")


def _number(x):
    # ember prints numbers as JavaScript would: integral floats without ".0".
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    if not math.isfinite(x):
        raise ValueError("tojson: not a finite number")
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    s = repr(x)
    if "e" in s:
        raise ValueError(f"tojson: {s}: keep generated numbers in plain decimal range")
    return s


def tojson(v):
    """JSON as the template engine's tojson writes it: ", " and ": " separators,
    keys in insertion order, non-ASCII characters as they are."""
    if v is None:
        return "null"
    if isinstance(v, (bool, int, float)):
        return _number(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(tojson(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(json.dumps(str(k), ensure_ascii=False) + ": " + tojson(x) for k, x in v.items()) + "}"
    raise TypeError(f"tojson: {type(v).__name__}")


def _trim(s):
    return s.strip(" \t\n\r\f\v")


def render_with_spans(messages, tools=None, add_generation_prompt=False, enable_thinking=None, arg_spans=None):
    """The rendered text and, for each assistant message, the span from just
    after "<|im_start|>assistant\\n" to the end of its "<|im_end|>" (the
    tokens a model is trained to produce).  arg_spans, when a list, receives
    the span of each assistant tool call's arguments JSON (from its "{" to
    its "}"): the tokens that decide whether a call is right (train.py
    --arg-weight)."""
    out, spans = [], []
    pos = 0

    def emit(s):
        nonlocal pos
        out.append(s)
        pos += len(s)

    has_system = bool(messages) and messages[0].get("role") == "system"
    if tools:
        emit("<|im_start|>system\n")
        if has_system:
            emit(messages[0]["content"] + "\n\n")
        emit(TOOLS_HEAD)
        for t in tools:
            emit("\n" + tojson(t))
        emit(TOOLS_TAIL)
    elif has_system:
        emit("<|im_start|>system\n" + messages[0]["content"] + "<|im_end|>\n")
    last_query = -1
    for i, m in enumerate(messages):
        c = m.get("content")
        if m.get("role") == "user" and isinstance(c, str) and not c.startswith("<tool_response>"):
            last_query = i
    n = len(messages)
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "user" or (role == "system" and i > 0):
            emit("<|im_start|>" + role + "\n" + m["content"] + "<|im_end|>\n")
        elif role == "assistant":
            content = m.get("content") if isinstance(m.get("content"), str) else ""
            reasoning = ""
            if isinstance(m.get("reasoning_content"), str):
                reasoning = m["reasoning_content"]
            elif "</think>" in content:
                reasoning = content.split("</think>")[0].split("<think>")[-1]
                content = content.split("</think>")[-1]
            emit("<|im_start|>assistant\n")
            start = pos
            if i > last_query and _trim(reasoning):
                emit("<think>\n" + _trim(reasoning) + "\n</think>\n\n")
            emit(_trim(content))
            for j, call in enumerate(m.get("tool_calls") or []):
                fn = call["function"] if "function" in call else call
                if _trim(content) or j > 0:
                    emit("\n")
                args = fn["arguments"]
                emit("<tool_call>\n{\"name\": \"" + fn["name"] + "\", \"arguments\": ")
                arg_start = pos
                emit(args if isinstance(args, str) else tojson(args))
                if arg_spans is not None:
                    arg_spans.append((arg_start, pos))
                emit("}\n</tool_call>")
            emit("<|im_end|>")
            spans.append((start, pos))
            emit("\n")
        elif role == "tool":
            if i == 0 or messages[i - 1].get("role") != "tool":
                emit("<|im_start|>user")
            emit("\n<tool_response>\n" + m["content"] + "\n</tool_response>")
            if i == n - 1 or messages[i + 1].get("role") != "tool":
                emit("<|im_end|>\n")
    if add_generation_prompt:
        emit("<|im_start|>assistant\n")
        if enable_thinking is False:
            emit("<think>\n\n</think>\n\n")
    return "".join(out), spans


def render(messages, tools=None, add_generation_prompt=False, enable_thinking=None):
    """The text reference/spark_chat_template.jinja renders."""
    return render_with_spans(messages, tools, add_generation_prompt, enable_thinking)[0]
