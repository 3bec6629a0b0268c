#!/usr/bin/python3
"""What scripts/run.sh shows with no model given: the trained demo model
(models/demo) writing prose, then one whole tool round trip, each step a
plain `ember` command:

  1. `ember generate -p "Once upon a time"`: a greedy prose continuation;
  2. the user's request and the offered tools rendered by the model's own chat
     template (`ember template --add-generation-prompt`), and the model's
     reply (`ember generate --prompt-file`): a <tool_call> block;
  3. this script runs the "tool" (a stand-in that answers from the call's
     own arguments), appends the assistant's call and the tool's result to
     the conversation, renders it again, and the model answers the user.

    /usr/bin/python3 scripts/demo.py [--model models/demo] [--ember build/ember]
        [--request "What's the weather in Lisbon?"] [--threads N]

Standard library only; exits non-zero when a step fails (no tool call, or an
argument the stand-in tool cannot use).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "reference", "demo"))
import chats  # noqa: E402  (the tool definitions the demo model was trained with)

OFFERED = ["get_weather", "set_timer", "convert_currency"]


def run_tool(name, args):
    """A stand-in for the real tools: a plausible result built from the call."""
    if name == "get_weather":
        unit = args.get("unit", "celsius")
        return {"city": args["city"], "temperature": 18 if unit == "celsius" else 64, "unit": unit,
                "condition": "sunny", "humidity": 41}
    if name == "set_timer":
        m = int(args["minutes"])
        end = (14 * 60 + 5 + m) % 1440
        return {"status": "set", "minutes": m, "ends_at": f"{end // 60:02d}:{end % 60:02d}"}
    if name == "convert_currency":
        amount = float(args["amount"])
        return {"amount": args["amount"], "from": args["from"], "to": args["to"], "rate": 1.1,
                "result": round(amount * 1.1, 2)}
    raise ValueError(f"the demo has no stand-in for the tool {name!r}")


def ember(cmd, args, **kw):
    out = subprocess.run([cmd, *args], capture_output=True, text=True, **kw)
    if out.returncode != 0:
        sys.exit(f"demo: {' '.join([cmd, *args])} failed: {out.stderr.strip()}")
    return out.stdout


def reply(a, tmp, messages, tools):
    """The model's greedy reply to the conversation, rendered by its template."""
    conv = os.path.join(tmp, "messages.json")
    with open(conv, "w", encoding="utf-8") as f:
        json.dump(messages, f)
    with open(os.path.join(tmp, "tools.json"), "w", encoding="utf-8") as f:
        json.dump(tools, f)
    prompt = ember(a.ember, ["template", "-m", a.model, "--messages", conv, "--tools",
                             os.path.join(tmp, "tools.json"), "--add-generation-prompt"])
    with open(os.path.join(tmp, "prompt.txt"), "w", encoding="utf-8") as f:
        f.write(prompt)
    return ember(a.ember, ["generate", "-m", a.model, "--prompt-file", os.path.join(tmp, "prompt.txt"),
                           "-n", "160", "--greedy", "--threads", str(a.threads)])


def parse_calls(text):
    """The <tool_call> blocks of a reply as (name, arguments) pairs."""
    calls = []
    for part in text.split("<tool_call>")[1:]:
        body = part.split("</tool_call>")[0].strip()
        call = json.loads(body)
        calls.append((call["name"], call["arguments"]))
    return calls


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "demo"))
    ap.add_argument("--ember", default=os.path.join(ROOT, "build", "ember"))
    ap.add_argument("--request", default="What's the weather in Lisbon?")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()

    prose = ember(a.ember, ["generate", "-m", a.model, "-p", "Once upon a time", "-n", "96", "--greedy",
                            "--threads", str(a.threads)])
    print("== prose: ember generate -m models/demo -p \"Once upon a time\" -n 96 --greedy\n")
    print("Once upon a time" + prose.rstrip() + "\n")

    tools = [chats.TOOLS[n] for n in OFFERED]
    messages = [{"role": "user", "content": a.request}]
    print("== a tool round trip (tools offered: " + ", ".join(OFFERED) + ")\n")
    print(f"user:      {a.request}")
    with tempfile.TemporaryDirectory() as tmp:
        first = reply(a, tmp, messages, tools)
        print("assistant: " + first.strip().replace("\n", "\n           "))
        try:
            calls = parse_calls(first)
        except (ValueError, KeyError, TypeError) as e:
            sys.exit(f"demo: the reply's tool call does not parse: {e}")
        if not calls:
            sys.exit("demo: the model answered without calling a tool")
        messages.append({"role": "assistant", "content": "",
                         "tool_calls": [{"type": "function", "function": {"name": n, "arguments": args}}
                                        for n, args in calls]})
        for name, args in calls:
            try:
                result = run_tool(name, args)
            except (KeyError, ValueError, TypeError) as e:
                sys.exit(f"demo: cannot run {name} with {json.dumps(args)}: {e}")
            print(f"tool:      {name} -> {json.dumps(result)}   (answered by scripts/demo.py)")
            messages.append({"role": "tool", "content": json.dumps(result)})
        final = reply(a, tmp, messages, tools)
        print("assistant: " + final.strip().replace("\n", "\n           "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
