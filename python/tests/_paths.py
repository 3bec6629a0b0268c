"""Where the tests find the models and the package: models/ of the source
checkout (EMBER_TEST_MODEL / EMBER_TEST_TTS override), and the package in
python/ unless one is installed ahead of it on sys.path."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.environ.get("EMBER_TEST_MODEL") or os.path.join(ROOT, "models", "tiny")
TTS = os.environ.get("EMBER_TEST_TTS") or os.path.join(ROOT, "models", "tts-tiny")
if not os.path.isabs(MODEL):
    MODEL = os.path.join(ROOT, MODEL)
if os.environ.get("EMBER_PYTHON_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(ROOT, "python"))
