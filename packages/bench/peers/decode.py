"""PyTorch peer of the `decode` suite of @ludic/bench (src/perf/decode-suite.ts): batched sampling with a key/value
cache from the same Llama (llama_peer.py) with the same weights — one prefill of the prompt, then one
forward pass per new token, sampling at temperature 1 from the full softmax (`torch.multinomial`) —
timed after warm-up.

    python decode.py --config config.json --weights inputs.safetensors --batch 8 [--new-tokens 128] [--warmup 1] [--repetitions 3] [--threads 2]

`inputs.safetensors` holds the parameters under Hugging Face names and `__batch__.prompt` ([8, promptLength]
int32; the first `--batch` rows are used). Prints one JSON line: milliseconds per generation and the
prompt's last-position logits checksum (to check the peer computes what the TypeScript model computes).
"""

import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_peer import KeyValueCache, environment, load_peer, median  # noqa: E402


@torch.inference_mode()
def generate(model, prompt, new_tokens, temperature, generator):
    cache = KeyValueCache(len(model.model.layers))
    logits = model(prompt, cache)[:, -1]  # [batch, vocab]
    tokens = []
    for index in range(new_tokens):
        probabilities = torch.softmax(logits / temperature, dim=-1)
        token = torch.multinomial(probabilities, 1, generator=generator)  # [batch, 1]
        tokens.append(token)
        if index + 1 < new_tokens:
            logits = model(token, cache)[:, -1]
    return torch.cat(tokens, dim=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--config', required=True)
    parser.add_argument('--weights', required=True)
    parser.add_argument('--batch', type=int, required=True)
    parser.add_argument('--new-tokens', type=int, default=128)
    parser.add_argument('--temperature', type=float, default=1.0)
    parser.add_argument('--warmup', type=int, default=1)
    parser.add_argument('--repetitions', type=int, default=3)
    parser.add_argument('--threads', type=int, default=2)
    arguments = parser.parse_args()

    torch.set_num_threads(arguments.threads)
    with open(arguments.config) as file:
        config = json.load(file)
    model, batch = load_peer(config, arguments.weights)
    model.eval()
    prompt = batch['prompt'][: arguments.batch].long()
    with torch.inference_mode():
        last_logits = model(prompt)[:, -1]
    generator = torch.Generator().manual_seed(0)

    times = []
    for repetition in range(arguments.warmup + arguments.repetitions):
        begin = time.perf_counter()
        tokens = generate(model, prompt, arguments.new_tokens, arguments.temperature, generator)
        elapsed = (time.perf_counter() - begin) * 1000.0
        assert tokens.shape == (arguments.batch, arguments.new_tokens)
        if repetition >= arguments.warmup:
            times.append(elapsed)
    print(json.dumps({
        'batch': arguments.batch,
        'newTokens': arguments.new_tokens,
        'promptLength': prompt.shape[1],
        'generationMs': times,
        'medianGenerationMs': median(times),
        'lastLogitsSum': float(last_logits.double().sum()),
        'lastLogitsFirst': [float(value) for value in last_logits[0, :4]],
        **environment(),
    }))


if __name__ == '__main__':
    main()
