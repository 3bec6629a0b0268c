"""ember: on-device inference (Spark-X2.5 text, Qwen3-TTS speech) from Python.

Pure ctypes over libember.so: no compiled extension and no third-party
package at run time (numpy, when installed, is used for logits and audio
arrays). The library is found through the EMBER_LIBRARY environment
variable, then next to this package, then build/libember.so of a source
checkout, then the system's loader (make install).

    import ember
    model = ember.Model("models/tiny")
    chat = model.chat(system="You are terse.")
    for event in chat.stream("Hello!", max_tokens=32):
        print(event.text, end="", flush=True)

    tts = ember.Speech("models/tts-tiny")
    tts.speak("Hello there.", wav="hello.wav")

Errors raise ember.EmberError (ember.Cancelled for a cancelled call) whose
message names the file, tensor, key or argument at fault.
"""

from ._lib import Cancelled, EmberError
from .profile import build_info, derive, hardware, version
from .speech import Audio, Chunk, Speech, WavWriter, write_wav
from .text import ChatTemplate, Chat, Event, Model, Reply, Session, Tokenizer

__version__ = version()

__all__ = ["Audio", "Cancelled", "Chat", "ChatTemplate", "Chunk", "EmberError", "Event", "Model",
           "Reply", "Session", "Speech", "Tokenizer", "WavWriter", "build_info", "derive",
           "hardware", "version", "write_wav"]
