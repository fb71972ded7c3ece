"""PyTorch + PEFT peer of lora-step-memory.ts: the same Qwen3-0.6B-shaped model (random weights from the
configuration), LoRA r=16 on q_proj and v_proj, loss = -mean log p(response token) over the last RESPONSE
tokens (the head applied to the response positions only, as Ludic does), one AdamW step. Prints one JSON line
with the peak resident set of the whole process (ru_maxrss) and of the step alone (VmHWM after
/proc/self/clear_refs).

    python packages/model/scripts/lora-step-memory.py [--entropy] [--layers N] [--vocab N] [--threads N]
"""

import argparse
import json
import resource
import time

import torch
from peft import LoraConfig, get_peft_model
from transformers import Qwen3Config, Qwen3ForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--layers", type=int, default=28)
parser.add_argument("--vocab", type=int, default=151936)
parser.add_argument("--batch", type=int, default=4)
parser.add_argument("--length", type=int, default=128)
parser.add_argument("--response", type=int, default=64)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--entropy", action="store_true")
args = parser.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(0)


def vm_hwm() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


GiB = 2**30
config = Qwen3Config(
    vocab_size=args.vocab,
    hidden_size=1024,
    intermediate_size=3072,
    num_hidden_layers=args.layers,
    num_attention_heads=16,
    num_key_value_heads=8,
    head_dim=128,
    max_position_embeddings=40960,
    rms_norm_eps=1e-6,
    rope_theta=1_000_000,
    tie_word_embeddings=True,
    attn_implementation="eager",
)
started = time.perf_counter()
model = Qwen3ForCausalLM(config)
build_seconds = time.perf_counter() - started
model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "v_proj"], lora_dropout=0.0))
model.train()
parameters = [p for p in model.parameters() if p.requires_grad]
optimizer = torch.optim.AdamW(parameters, lr=1e-4)
build_peak = vm_hwm()

# The same token ids as the TypeScript script (a linear congruential sequence).
ids = []
state = 12345
for _ in range(args.batch):
    row = []
    for _ in range(args.length):
        state = (state * 1103515245 + 12345) % 2**31
        row.append(1 + state % (args.vocab - 1))
    ids.append(row)
input_ids = torch.tensor(ids)
prompt = args.length - args.response

with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")
started = time.perf_counter()
hidden = model.base_model.model.model(input_ids=input_ids).last_hidden_state  # [batch, length, hidden]
predicting = hidden[:, prompt - 1 : args.length - 1]  # the positions that predict the response
logits = model.base_model.model.lm_head(predicting).float()  # [batch, response, vocab]
log_probs = torch.log_softmax(logits, dim=-1)
chosen = log_probs.gather(-1, input_ids[:, prompt:].unsqueeze(-1)).squeeze(-1)
loss = -chosen.mean()
if args.entropy:
    entropy = -(log_probs.exp() * log_probs).sum(-1).mean()
    loss = loss - 0.01 * entropy
del logits, log_probs
loss.backward()
optimizer.step()
optimizer.zero_grad(set_to_none=True)
step_seconds = time.perf_counter() - started
print(
    json.dumps(
        {
            "peer": f"torch {torch.__version__}",
            "layers": args.layers,
            "vocabulary": args.vocab,
            "shape": [args.batch, args.length, args.response],
            "withEntropy": args.entropy,
            "loss": loss.item(),
            "buildSeconds": round(build_seconds, 1),
            "stepSeconds": round(step_seconds, 1),
            "buildPeakGiB": round(build_peak / GiB, 2),
            "stepPeakGiB": round(vm_hwm() / GiB, 2),
            "maxrssGiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GiB, 2),
        }
    )
)
