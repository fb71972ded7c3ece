"""Writes the reference fixture that packages/model/src/training tests compare against.

Every expected value is computed by the reference implementation itself: `torch.optim.AdamW` and
`torch.optim.Adam` (CPU, float32, default single-tensor path), `torch.nn.utils.clip_grad_norm_` and
`transformers.optimization`'s schedules driven through `LambdaLR`, in the order a training loop calls them
(clip, `optimizer.step()`, `scheduler.step()`).

Run from the repository root (the output is committed; rerun only to change it):

    python3 -m venv /tmp/venv-train
    /tmp/venv-train/bin/pip install torch==2.13.0+cpu safetensors numpy transformers
    /tmp/venv-train/bin/python packages/model/scripts/make-optimizer-references.py

Output: packages/model/test/fixtures/optimizer-references.json with
    optimizer  cases: hyperparameters, parameter groups (names without weight decay), initial parameters,
               then per step the gradients, the learning rate used, the clipping norm/coefficient (when
               clipping) and the parameters after the step. Every float is a float32 value.
    clipping   cases: gradients, max norm, torch's total norm and the clipped gradients.
    schedules  cases: the transformers function, its arguments and the multiplier for each step.
"""

import json
import os

import numpy as np
import torch
import transformers
from torch.optim.lr_scheduler import LambdaLR
from transformers.optimization import (
    get_constant_schedule,
    get_constant_schedule_with_warmup,
    get_cosine_schedule_with_warmup,
    get_cosine_with_min_lr_schedule_with_warmup,
    get_linear_schedule_with_warmup,
)

torch.set_num_threads(1)
OUTPUT = os.path.join(os.path.dirname(__file__), '..', 'test', 'fixtures', 'optimizer-references.json')

# Hugging Face-style names and small shapes: a matrix, a norm gain, a bias, an embedding.
PARAMETER_SHAPES = {
    'model.embed_tokens.weight': [6, 4],
    'model.layers.0.self_attn.q_proj.weight': [4, 4],
    'model.layers.0.input_layernorm.weight': [4],
    'model.layers.0.mlp.up_proj.bias': [5],
    'lm_head.weight': [6, 4],
}
NO_DECAY = ['model.layers.0.input_layernorm.weight', 'model.layers.0.mlp.up_proj.bias']


def values(tensor):
    """A float32 tensor as a flat list of Python floats (each exactly a float32 value)."""
    return [float(x) for x in tensor.detach().to(torch.float32).reshape(-1).tolist()]


def random_float32(generator, shape, scale=1.0):
    return torch.from_numpy((generator.standard_normal(shape) * scale).astype(np.float32))


def initial_parameters(seed):
    generator = np.random.default_rng(seed)
    return {name: random_float32(generator, shape, 0.5) for name, shape in PARAMETER_SHAPES.items()}


def gradient_scales(step):
    """Per-parameter gradient magnitudes that exercise epsilon (tiny), clipping (large) and the ordinary case."""
    return {
        'model.embed_tokens.weight': 1.0,
        'model.layers.0.self_attn.q_proj.weight': 3.0 if step % 2 == 0 else 0.05,
        'model.layers.0.input_layernorm.weight': 1e-9,  # far below epsilon: the update is ε-dominated
        'model.layers.0.mlp.up_proj.bias': 0.2,
        'lm_head.weight': 10.0 if step == 1 else 0.5,
    }


def optimizer_case(case_id, description, *, seed, steps, kind, lr, betas, eps, weight_decay, exclude, clip=None, schedule=None):
    generator = np.random.default_rng(seed + 1000)
    start = initial_parameters(seed)
    parameters = {name: torch.nn.Parameter(value.clone()) for name, value in start.items()}
    decayed = [parameters[name] for name in PARAMETER_SHAPES if name not in exclude]
    not_decayed = [parameters[name] for name in PARAMETER_SHAPES if name in exclude]
    groups = [{'params': decayed, 'weight_decay': weight_decay}]
    if not_decayed:
        groups.append({'params': not_decayed, 'weight_decay': 0.0})
    optimizer_class = torch.optim.AdamW if kind == 'adamw' else torch.optim.Adam
    optimizer = optimizer_class(groups, lr=lr, betas=betas, eps=eps)
    scheduler = None
    if schedule is not None:
        scheduler = get_cosine_with_min_lr_schedule_with_warmup(
            optimizer,
            num_warmup_steps=schedule['warmupSteps'],
            num_training_steps=schedule['totalSteps'],
            min_lr_rate=schedule['minRatio'],
        )
    records = []
    for step in range(steps):
        scales = gradient_scales(step)
        gradients = {name: random_float32(generator, PARAMETER_SHAPES[name], scales[name]) for name in PARAMETER_SHAPES}
        for name, parameter in parameters.items():
            parameter.grad = gradients[name].clone()
        record = {'gradients': {name: values(gradient) for name, gradient in gradients.items()}}
        if clip is not None:
            norm = torch.nn.utils.clip_grad_norm_(list(parameters.values()), clip, error_if_nonfinite=True)
            record['clip'] = {'maxNorm': clip, 'norm': float(norm), 'clipped': {n: values(p.grad) for n, p in parameters.items()}}
        record['learningRate'] = optimizer.param_groups[0]['lr']
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        record['expected'] = {name: values(parameter) for name, parameter in parameters.items()}
        records.append(record)
    state = optimizer.state[parameters['lm_head.weight']]
    return {
        'id': case_id,
        'description': description,
        'torchClass': optimizer_class.__name__,
        'options': {
            'learningRate': lr,
            'beta1': betas[0],
            'beta2': betas[1],
            'epsilon': eps,
            'weightDecay': weight_decay,
            'decoupled': kind == 'adamw',
            'excludeFromWeightDecay': exclude,
        },
        'clipMaxNorm': clip,
        'schedule': schedule,
        'shapes': PARAMETER_SHAPES,
        'initial': {name: values(value) for name, value in start.items()},
        'steps': records,
        'finalState': {
            'step': int(state['step'].item()),
            'lm_head.weight.exp_avg': values(state['exp_avg']),
            'lm_head.weight.exp_avg_sq': values(state['exp_avg_sq']),
        },
    }


def clipping_case(case_id, seed, max_norm, scale, zero=None):
    generator = np.random.default_rng(seed)
    shapes = {'a.weight': [3, 5], 'b.bias': [7], 'c.weight': [2, 2, 3]}
    gradients = {name: random_float32(generator, shape, scale) for name, shape in shapes.items()}
    if zero is not None:
        gradients[zero] = torch.zeros(shapes[zero])
    parameters = []
    for name in shapes:
        parameter = torch.nn.Parameter(torch.zeros(shapes[name]))
        parameter.grad = gradients[name].clone()
        parameters.append(parameter)
    norm = torch.nn.utils.clip_grad_norm_(parameters, max_norm, error_if_nonfinite=True)
    return {
        'id': case_id,
        'maxNorm': max_norm,
        'shapes': shapes,
        'gradients': {name: values(gradient) for name, gradient in gradients.items()},
        'norm': float(norm),
        'clipped': {name: values(parameter.grad) for name, parameter in zip(shapes, parameters)},
    }


def schedule_values(make, steps):
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=1.0)
    scheduler = make(optimizer)
    assert isinstance(scheduler, LambdaLR)
    return [float(scheduler.lr_lambdas[0](step)) for step in range(steps)]


def schedule_cases():
    cases = []

    def add(case_id, function, options, make, steps):
        cases.append({'id': case_id, 'function': function, 'options': options, 'values': schedule_values(make, steps)})

    add('cosine', 'get_cosine_schedule_with_warmup', {'warmupSteps': 3, 'totalSteps': 10},
        lambda o: get_cosine_schedule_with_warmup(o, num_warmup_steps=3, num_training_steps=10), 14)
    add('cosine-no-warmup-cycles', 'get_cosine_schedule_with_warmup', {'warmupSteps': 0, 'totalSteps': 7, 'cycles': 1.5},
        lambda o: get_cosine_schedule_with_warmup(o, num_warmup_steps=0, num_training_steps=7, num_cycles=1.5), 10)
    add('cosine-long', 'get_cosine_schedule_with_warmup', {'warmupSteps': 30, 'totalSteps': 250},
        lambda o: get_cosine_schedule_with_warmup(o, num_warmup_steps=30, num_training_steps=250), 270)
    add('cosine-min-ratio', 'get_cosine_with_min_lr_schedule_with_warmup', {'warmupSteps': 2, 'totalSteps': 12, 'minRatio': 0.1},
        lambda o: get_cosine_with_min_lr_schedule_with_warmup(o, num_warmup_steps=2, num_training_steps=12, min_lr_rate=0.1), 16)
    add('cosine-min-ratio-cycles', 'get_cosine_with_min_lr_schedule_with_warmup',
        {'warmupSteps': 1, 'totalSteps': 9, 'minRatio': 0.25, 'cycles': 2},
        lambda o: get_cosine_with_min_lr_schedule_with_warmup(o, num_warmup_steps=1, num_training_steps=9, num_cycles=2, min_lr_rate=0.25), 12)
    add('linear', 'get_linear_schedule_with_warmup', {'warmupSteps': 4, 'totalSteps': 10},
        lambda o: get_linear_schedule_with_warmup(o, num_warmup_steps=4, num_training_steps=10), 13)
    add('constant-warmup', 'get_constant_schedule_with_warmup', {'warmupSteps': 5},
        lambda o: get_constant_schedule_with_warmup(o, num_warmup_steps=5), 8)
    add('constant', 'get_constant_schedule', {}, lambda o: get_constant_schedule(o), 4)
    return cases


def main():
    fixture = {
        'generator': 'packages/model/scripts/make-optimizer-references.py',
        'torch': torch.__version__,
        'transformers': transformers.__version__,
        'optimizer': [
            optimizer_case('adamw', 'torch.optim.AdamW, decoupled weight decay on every parameter',
                           seed=1, steps=5, kind='adamw', lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1, exclude=[]),
            optimizer_case('adamw-exclusions', 'AdamW with norm gains and biases in a weight_decay=0 group',
                           seed=2, steps=5, kind='adamw', lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1, exclude=NO_DECAY),
            optimizer_case('adamw-no-decay', 'AdamW with weight_decay=0, other betas and epsilon',
                           seed=3, steps=6, kind='adamw', lr=3e-3, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.0, exclude=[]),
            optimizer_case('adam-coupled-decay', 'torch.optim.Adam with weight_decay (L2 added to the gradient)',
                           seed=4, steps=5, kind='adam', lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.05, exclude=NO_DECAY),
            optimizer_case('adamw-clip-cosine', 'clip_grad_norm_(12.0) (clips about half the steps), AdamW, cosine schedule with warm-up and min_lr_rate, 10 steps',
                           seed=5, steps=10, kind='adamw', lr=5e-2, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.01, exclude=NO_DECAY,
                           clip=12.0, schedule={'warmupSteps': 2, 'totalSteps': 10, 'minRatio': 0.1}),
        ],
        'clipping': [
            clipping_case('clipped', seed=11, max_norm=1.0, scale=2.0),
            clipping_case('below-max', seed=12, max_norm=100.0, scale=0.5),
            clipping_case('with-zero-gradient', seed=13, max_norm=0.5, scale=1.0, zero='b.bias'),
            clipping_case('tiny-max', seed=14, max_norm=1e-3, scale=3.0),
        ],
        'schedules': schedule_cases(),
    }
    with open(OUTPUT, 'w') as file:
        json.dump(fixture, file, separators=(',', ':'))
        file.write('\n')
    print(f'wrote {os.path.normpath(OUTPUT)} ({os.path.getsize(OUTPUT)} bytes)')


if __name__ == '__main__':
    main()
