"""Checks that checkpoints saved by Ludic load in transformers and give Ludic's logits.

    /tmp/venv-model/bin/python packages/model/scripts/check-ludic-checkpoints.py [output-directory]

Runs test/export-ludic-checkpoints.test.ts under vitest with LUDIC_EXPORT_CHECKPOINTS set (it re-saves every
reference fixture with Ludic's saveModel, and creates and saves models of every architecture, in float32,
bfloat16, float16 and sharded), then loads each directory with AutoModelForCausalLM.from_pretrained (float32)
and compares its logits on the attended positions with those Ludic computed (ludic-logits.safetensors).
A LoRA adapter saved by Ludic's saveLoraAdapter on the qwen2 fixture is loaded with PeftModel.from_pretrained
and compared the same way. Prints one line per checkpoint and exits non-zero if any relative error (max |Δ| / max |Ludic|) is 1e-4 or more.
"""

import os
import pathlib
import subprocess
import sys
import tempfile

import torch
import transformers
from safetensors import safe_open
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

ROOT = pathlib.Path(__file__).resolve().parents[3]
TOLERANCE = 1e-4


def compare(model, directory):
    """max |transformers - Ludic| / max |Ludic| over the attended positions of ludic-logits.safetensors."""
    reference = load_file(directory / "ludic-logits.safetensors")
    ids = reference["input_ids"].long()
    mask = reference["attention_mask"].long()
    positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits
    attended = mask.bool()
    difference = (logits - reference["logits"]).abs()[attended].max().item()
    return difference / reference["logits"].abs()[attended].max().item()


def main():
    output = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="ludic-checkpoints-"))
    output.mkdir(parents=True, exist_ok=True)
    environment = dict(os.environ, LUDIC_EXPORT_CHECKPOINTS=str(output))
    subprocess.run(
        ["npx", "vitest", "run", "--project", "model", "test/export-ludic-checkpoints.test.ts"],
        cwd=ROOT,
        env=environment,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    print(f"transformers {transformers.__version__}, torch {torch.__version__}; checkpoints in {output}")
    worst = 0.0
    for directory in sorted(path for path in output.iterdir() if path.is_dir() and path.name != "adapters"):
        model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()
        error = compare(model, directory)
        worst = max(worst, error)
        files = sorted(path.name for path in directory.iterdir() if path.name.startswith("model") and path.name.endswith(".safetensors"))
        with safe_open(directory / files[0], "pt") as handle:
            dtype = str(handle.get_slice(next(iter(handle.keys()))).get_dtype())
        print(f"{directory.name:28} {model.config.model_type:8} {type(model).__name__:18} saved {dtype:9} in {len(files)} file(s)  relative error {error:.2e}")
    for directory in sorted((output / "adapters").iterdir()):
        from peft import PeftConfig, PeftModel

        config = PeftConfig.from_pretrained(directory)
        base = AutoModelForCausalLM.from_pretrained(config.base_model_name_or_path, dtype=torch.float32).eval()
        model = PeftModel.from_pretrained(base, directory).eval()
        error = compare(model, directory)
        worst = max(worst, error)
        modules = ", ".join(sorted(config.target_modules))
        print(f"{directory.name:28} PEFT {type(model).__name__} r={config.r} alpha={config.lora_alpha} on {modules}  relative error {error:.2e}")
    print(f"largest relative error {worst:.2e} ({'ok' if worst < TOLERANCE else 'FAILED'}, tolerance {TOLERANCE})")
    sys.exit(0 if worst < TOLERANCE else 1)


if __name__ == "__main__":
    main()
