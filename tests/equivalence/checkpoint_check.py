"""Load checkpoints strictly into fresh models from a fixture's own factory; one JSON line each.

Run in the torch interpreter by the harness (the test process need not have torch):
    python checkpoint_check.py FIXTURE_FOLDER MODULE:FUNCTION KEY_JSON STRIP_PREFIX_JSON PATH...
KEY_JSON: the state_dict's key in the saved dict, or null when the file is the state_dict. A file
holding a whole pickled model, or a dict holding one under KEY (the SSD tutorial's
``{'epoch': ..., 'model': model, 'optimizer': optimizer}``), must hold the factory's own class
(not a DDP or compiled wrapper).
STRIP_PREFIX_JSON: a prefix every key carries (DDP's "module."), or null.
A ``save_pretrained`` folder: its ``.safetensors`` weights load strictly like a state_dict, and its
``config.json`` must describe the fresh model's own class.
"""

import importlib
import json
import sys


def main() -> None:
    folder, factory, key, strip = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
    sys.path.insert(0, folder)
    import torch

    module_name, _, function = factory.partition(":")
    build = getattr(importlib.import_module(module_name), function)
    for path in sys.argv[5:]:
        error = None
        try:
            fresh = build()
            if path.endswith(".json"):
                _check_config(path, fresh)
                print(json.dumps({"path": path, "error": None}), flush=True)
                continue
            if path.endswith(".safetensors"):
                from safetensors.torch import load_file

                saved = load_file(path)
            else:
                saved = torch.load(path, map_location="cpu", weights_only=False)
            if not isinstance(saved, torch.nn.Module) and key is not None:
                saved = saved[key]
            if isinstance(saved, torch.nn.Module):  # a whole model pickled: the plain module, no wrapper
                if type(saved) is not type(fresh):
                    raise TypeError(f"a pickled {type(saved).__name__}, not a plain {type(fresh).__name__}")
                state = saved.state_dict()
            else:
                state = saved
            if strip and all(k.startswith(strip) for k in state):
                state = {k[len(strip) :]: v for k, v in state.items()}
            fresh.load_state_dict(state, strict=True)
        except Exception as exc:  # noqa: BLE001 - every failure is a finding, reported as text
            error = f"{type(exc).__name__}: {str(exc)[:400]}"
        print(json.dumps({"path": path, "error": error}), flush=True)


def _check_config(path: str, fresh) -> None:
    """``save_pretrained``'s config: the architecture the fresh model has (not a wrapper's)."""
    with open(path) as handle:
        config = json.load(handle)
    if config.get("architectures") != [type(fresh).__name__]:
        raise TypeError(f"config.json names {config.get('architectures')}, not {type(fresh).__name__}")


if __name__ == "__main__":
    main()
