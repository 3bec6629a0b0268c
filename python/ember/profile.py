"""The hardware probe, the derived profile, version and build information.

    import ember
    ember.hardware()                 # what this machine has (a dict)
    ember.derive("models/tiny")      # what ember picks for a model here, with reasons
    ember.build_info()["kernels_runnable"]
"""

import ctypes
import json

from ._lib import check, enc, lib, path_arg, take_string


def _params(root, hardware, context=0, kv_type=None, prefill_chunk=0):
    from ._lib import type_code
    p = lib.ember_profile_default_params()
    keep = (enc(root), enc(hardware))
    p.root, p.hardware = keep
    p.context = int(context or 0)
    p.kv_type = type_code(kv_type)
    p.prefill_chunk = int(prefill_chunk or 0)
    return p, keep


def hardware(root=None, override=None):
    """The hardware profile as a dict (`ember probe --json`). root: probe a
    snapshot tree of /proc and /sys instead of this machine; override: a
    hardware profile (JSON text or a path) that replaces the probe."""
    p, _keep = _params(root, override)
    out = ctypes.c_void_p()
    check(lib.ember_hardware_probe(ctypes.byref(p), ctypes.byref(out)))
    return json.loads(take_string(out))


def derive(model_dir, root=None, override=None, context=0, kv_type=None, prefill_chunk=0):
    """The profile derived for the model in model_dir (Spark or Qwen3-TTS)
    as {"hardware", "model", "profile"} (`ember probe --derive --json`); the
    profile's "why" holds one reason per choice."""
    p, _keep = _params(root, override, context, kv_type, prefill_chunk)
    out = ctypes.c_void_p()
    check(lib.ember_profile_derive(path_arg(model_dir), ctypes.byref(p), ctypes.byref(out)))
    return json.loads(take_string(out))


def version():
    """The library's version, "MAJOR.MINOR.PATCH"."""
    return lib.ember_version_string().decode()


def build_info():
    """How the library was built and what it runs here (a dict: version,
    compiler, arch, kernels_built, kernels_runnable, kernels_default, cpu)."""
    out = ctypes.c_void_p()
    check(lib.ember_build_info(ctypes.byref(out)))
    return json.loads(take_string(out))
