"""PyTorch peer of the `train-step` suite of @ludic/bench (src/perf/train-step-suite.ts): one training step of the
same Llama (llama_peer.py) on the same batch with the same weights — forward, next-token cross-entropy,
backward, `torch.optim.AdamW` (torch's default CPU path) — timed after warm-up.

    python train_step.py --config config.json --weights inputs.safetensors [--warmup 2] [--repetitions 5] [--threads 2]

`inputs.safetensors` holds the model's parameters under Hugging Face names plus `__batch__.input_ids` and
`__batch__.targets` ([batch, time] int32). Prints one JSON line: the initial loss (to check the peer computes
what the TypeScript model computes), step and optimizer times in milliseconds, and the torch environment.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_peer import assert_finite, environment, load_peer, median  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--config', required=True, help='ModelConfig JSON file (camelCase, as the TypeScript model reports it)')
    parser.add_argument('--weights', required=True)
    parser.add_argument('--warmup', type=int, default=2)
    parser.add_argument('--repetitions', type=int, default=5)
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--learning-rate', type=float, default=1e-3)
    parser.add_argument('--weight-decay', type=float, default=0.01)
    arguments = parser.parse_args()

    torch.set_num_threads(arguments.threads)
    torch.manual_seed(0)
    with open(arguments.config) as file:
        config = json.load(file)
    model, batch = load_peer(config, arguments.weights)
    input_ids = batch['input_ids'].long()
    targets = batch['targets'].long()
    vocab = config['vocabSize']
    optimizer = torch.optim.AdamW(model.parameters(), lr=arguments.learning_rate, weight_decay=arguments.weight_decay)

    with torch.no_grad():
        initial_loss = F.cross_entropy(model(input_ids).reshape(-1, vocab), targets.reshape(-1)).item()
    assert_finite(initial_loss, 'initial loss')

    def step():
        begin = time.perf_counter()
        logits = model(input_ids)  # [batch, time, vocab]
        loss = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer_begin = time.perf_counter()
        optimizer.step()
        end = time.perf_counter()
        value = loss.item()
        return value, (end - begin) * 1000.0, (end - optimizer_begin) * 1000.0

    losses, step_ms, optimizer_ms = [], [], []
    for _ in range(arguments.warmup):
        step()
    for _ in range(arguments.repetitions):
        loss, total, optimizer_time = step()
        losses.append(loss)
        step_ms.append(total)
        optimizer_ms.append(optimizer_time)
    print(json.dumps({
        'initialLoss': initial_loss,
        'losses': losses,
        'stepMs': step_ms,
        'medianStepMs': median(step_ms),
        'medianOptimizerMs': median(optimizer_ms),
        'parameters': sum(parameter.numel() for parameter in model.parameters()),
        **environment(),
    }))


if __name__ == '__main__':
    main()
