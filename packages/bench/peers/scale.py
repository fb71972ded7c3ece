"""PyTorch peer of the `scale` suite of @ludic/bench (src/scale/scale-suite.ts): builds a Qwen3-0.6B-shaped
checkpoint from its configuration (random bf16 weights, seeded) and measures transformers + PEFT on it, one
measurement per process so each peak resident memory is its own.

    python scale.py build --directory DIR [--layers 28] [--seed 0] [--shape '{"hidden_size": 64, ...}']
    python scale.py measure --directory DIR --what load|prefill|decode|lora [--batch 8] [--warmup 1] [--repetitions 3] [--threads 2]

`build` writes `config.json`, sharded `model-0000k-of-0000n.safetensors` with their index (transformers'
`save_pretrained`, tied embeddings: no `lm_head.weight`) and `inputs.json` (the token ids every measurement of
both sides uses) into DIR, unless DIR already holds a build of the same shape (`build.json`). `measure` loads
the checkpoint as float32 (`from_pretrained(dtype=torch.float32)`) and times one kind of work:

- `load`: `from_pretrained` itself;
- `prefill`: one forward pass over the `[1, 128]` prompt;
- `decode`: `--batch` sequences of `decode_new_tokens` tokens sampled at temperature 1 after a short prompt, with
  the key/value cache (one forward pass per token), tokens/s counting the new tokens only;
- `lora`: PEFT LoRA r=16 (alpha 32) on `q_proj`, `v_proj`, then one AdamW step on the `[4, 128]` batch with the
  loss −mean(advantage · Σ log p(response token)) over the last 64 tokens (logits only for those positions).

Prints one JSON line: seconds (median of the timed repetitions after warm-up), and the process's peak resident
memory (`ru_maxrss`) in bytes. Needs torch, transformers and peft.
"""

import argparse
import json
import os
import resource
import statistics
import sys
import time

import torch

# The real Qwen3-0.6B configuration (Qwen/Qwen3-0.6B config.json), the vocabulary rounded as released.
QWEN3_0_6B = {
    'architectures': ['Qwen3ForCausalLM'],
    'model_type': 'qwen3',
    'vocab_size': 151936,
    'hidden_size': 1024,
    'intermediate_size': 3072,
    'num_hidden_layers': 28,
    'num_attention_heads': 16,
    'num_key_value_heads': 8,
    'head_dim': 128,
    'hidden_act': 'silu',
    'max_position_embeddings': 40960,
    'rms_norm_eps': 1e-6,
    'rope_theta': 1000000.0,
    'tie_word_embeddings': True,
    'attention_bias': False,
    'attention_dropout': 0.0,
    'use_cache': True,
    'bos_token_id': 151643,
    'eos_token_id': 151645,
}

PROMPT_LENGTH = 128
DECODE_PROMPT_LENGTH = 8
TRAIN_BATCH = 4
TRAIN_LENGTH = 128
RESPONSE_LENGTH = 64


def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def token_rows(generator, rows, columns, vocab):
    return torch.randint(0, vocab, (rows, columns), generator=generator).tolist()


def build(arguments):
    shape = dict(QWEN3_0_6B)
    shape['num_hidden_layers'] = arguments.layers
    shape.update(json.loads(arguments.shape))
    wanted = {'shape': shape, 'seed': arguments.seed, 'version': 1}
    import peft
    import transformers
    from transformers import Qwen3Config, Qwen3ForCausalLM

    versions = {'transformers': transformers.__version__, 'peft': peft.__version__}
    marker = os.path.join(arguments.directory, 'build.json')
    if os.path.exists(marker):
        with open(marker) as file:
            if json.load(file) == wanted:
                print(json.dumps({'built': False, 'directory': arguments.directory, **versions}))
                return

    start = time.perf_counter()
    torch.manual_seed(arguments.seed)
    config = Qwen3Config(**{key: value for key, value in shape.items() if key not in ('architectures', 'model_type')})
    torch.set_default_dtype(torch.bfloat16)
    model = Qwen3ForCausalLM(config)
    torch.set_default_dtype(torch.float32)
    model.eval()
    os.makedirs(arguments.directory, exist_ok=True)
    model.save_pretrained(arguments.directory, max_shard_size=arguments.max_shard_size, safe_serialization=True)
    generator = torch.Generator().manual_seed(arguments.seed + 1)
    vocab = shape['vocab_size']
    inputs = {
        'prompt': token_rows(generator, 1, PROMPT_LENGTH, vocab)[0],
        'decode_prompts': token_rows(generator, 8, DECODE_PROMPT_LENGTH, vocab),
        'train_ids': token_rows(generator, TRAIN_BATCH, TRAIN_LENGTH, vocab),
        'response_length': RESPONSE_LENGTH,
        'advantages': [1.0, -0.5, 0.25, -1.0][:TRAIN_BATCH],
    }
    with open(os.path.join(arguments.directory, 'inputs.json'), 'w') as file:
        json.dump(inputs, file)
    with open(marker, 'w') as file:
        json.dump(wanted, file)
    print(json.dumps({'built': True, **versions, 'directory': arguments.directory, 'seconds': time.perf_counter() - start, 'parameters': sum(p.numel() for p in model.parameters())}))


def load(directory):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32)


def timed(function, warmup, repetitions):
    for _ in range(warmup):
        function()
    times = []
    for _ in range(repetitions):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return times


def measure(arguments):
    torch.set_num_threads(arguments.threads)
    torch.manual_seed(0)
    with open(os.path.join(arguments.directory, 'inputs.json')) as file:
        inputs = json.load(file)
    result = {'what': arguments.what, 'threads': arguments.threads, 'torch': torch.__version__}

    if arguments.what == 'load':
        start = time.perf_counter()
        model = load(arguments.directory)
        result['seconds'] = time.perf_counter() - start
        result['parameters'] = sum(p.numel() for p in model.parameters())
        result['peakRssBytes'] = peak_rss_bytes()
        print(json.dumps(result))
        return

    model = load(arguments.directory)
    model.eval()
    if arguments.what == 'prefill':
        prompt = torch.tensor([inputs['prompt']])

        @torch.inference_mode()
        def prefill():
            logits = model(input_ids=prompt, use_cache=False, logits_to_keep=1).logits
            return logits

        times = timed(prefill, arguments.warmup, arguments.repetitions)
        with torch.inference_mode():
            last = model(input_ids=prompt, use_cache=False, logits_to_keep=1).logits[0, -1]
        result['lastLogitsSum'] = float(last.sum())
    elif arguments.what == 'decode':
        prompts = torch.tensor(inputs['decode_prompts'][: arguments.batch])
        generator = torch.Generator().manual_seed(0)
        new_tokens = arguments.new_tokens

        @torch.inference_mode()
        def decode():
            output = model(input_ids=prompts, use_cache=True, logits_to_keep=1)
            cache = output.past_key_values
            logits = output.logits[:, -1]
            for index in range(new_tokens):
                token = torch.multinomial(torch.softmax(logits.float(), dim=-1), 1, generator=generator)
                if index + 1 < new_tokens:
                    output = model(input_ids=token, past_key_values=cache, use_cache=True, logits_to_keep=1)
                    cache = output.past_key_values
                    logits = output.logits[:, -1]

        times = timed(decode, arguments.warmup, arguments.repetitions)
        result['batch'] = arguments.batch
        result['newTokens'] = new_tokens
        result['tokensPerSecond'] = arguments.batch * new_tokens / statistics.median(times)
    elif arguments.what == 'lora':
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=['q_proj', 'v_proj']))
        model.train()
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4, weight_decay=0.0)
        ids = torch.tensor(inputs['train_ids'])
        response = inputs['response_length']
        advantages = torch.tensor(inputs['advantages'])
        targets = ids[:, -response:]
        losses = []

        def step():
            # Logits only at the positions that predict response tokens (the last `response` + 1, the final one unused).
            logits = model(input_ids=ids, use_cache=False, logits_to_keep=response + 1).logits[:, :-1]
            logprobs = torch.log_softmax(logits.float(), dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
            loss = -(advantages * logprobs.sum(dim=1)).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))

        times = timed(step, arguments.warmup, arguments.repetitions)
        result['initialLoss'] = losses[0]
        result['trainable'] = sum(p.numel() for p in model.parameters() if p.requires_grad)
    else:
        raise SystemExit(f'unknown --what {arguments.what}')
    result['seconds'] = statistics.median(times)
    result['times'] = times
    result['peakRssBytes'] = peak_rss_bytes()
    print(json.dumps(result))


def main():
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest='command', required=True)
    build_parser = commands.add_parser('build')
    build_parser.add_argument('--directory', required=True)
    build_parser.add_argument('--layers', type=int, default=28)
    build_parser.add_argument('--seed', type=int, default=0)
    build_parser.add_argument('--shape', default='{}', help='JSON object of config fields overriding the 0.6B shape (tests use a tiny one)')
    build_parser.add_argument('--max-shard-size', default='400MB')
    measure_parser = commands.add_parser('measure')
    measure_parser.add_argument('--directory', required=True)
    measure_parser.add_argument('--what', required=True, choices=['load', 'prefill', 'decode', 'lora'])
    measure_parser.add_argument('--batch', type=int, default=1)
    measure_parser.add_argument('--new-tokens', type=int, default=32)
    measure_parser.add_argument('--warmup', type=int, default=1)
    measure_parser.add_argument('--repetitions', type=int, default=3)
    measure_parser.add_argument('--threads', type=int, default=2)
    arguments = parser.parse_args()
    if arguments.command == 'build':
        build(arguments)
    else:
        measure(arguments)


if __name__ == '__main__':
    sys.exit(main())
