"""The PyTorch peer of Ludic's transformer: the same Llama architecture as packages/model (presets and
Hugging Face checkpoints), in plain PyTorch, with Hugging Face's parameter names so that the weights the
TypeScript benchmark writes load one to one.

    embedding → per layer: x + attention(rms_norm(x)), x + swiglu_mlp(rms_norm(x)) → rms_norm → tied output

Attention is multi-head (or grouped-query) with rotary positions in transformers' "rotate half" layout,
computed by `torch.nn.functional.scaled_dot_product_attention` as transformers' default `sdpa` path does.
Decoding appends keys and values to a per-layer cache with `torch.cat`, as transformers' `DynamicCache`.

Only needs torch (safetensors files are read here, without the safetensors package); no transformers.
"""

import json
import math
import struct
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, width, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x):
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.heads = config['numAttentionHeads']
        self.key_value_heads = config['numKeyValueHeads']
        self.head_dim = config['headDim']
        width = config['hiddenSize']
        self.q_proj = nn.Linear(width, self.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(width, self.key_value_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(width, self.key_value_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.heads * self.head_dim, width, bias=False)

    def forward(self, x, cos, sin, cache, layer):
        batch, time_steps, _ = x.shape
        query = self.q_proj(x).view(batch, time_steps, self.heads, self.head_dim).transpose(1, 2)  # [batch, heads, time, headDim]
        key = self.k_proj(x).view(batch, time_steps, self.key_value_heads, self.head_dim).transpose(1, 2)
        value = self.v_proj(x).view(batch, time_steps, self.key_value_heads, self.head_dim).transpose(1, 2)
        query = query * cos + rotate_half(query) * sin
        key = key * cos + rotate_half(key) * sin
        past = 0
        if cache is not None:
            past = cache.length(layer)
            key, value = cache.append(layer, key, value)  # [batch, kvHeads, past + time, headDim]
        # A new sequence (no past) is causal; one new token attends to everything cached.
        causal = time_steps > 1
        if causal and past > 0:
            raise ValueError('prefill after cached positions is not needed by the benchmarks')
        attended = F.scaled_dot_product_attention(query, key, value, is_causal=causal, enable_gqa=self.heads != self.key_value_heads)
        merged = attended.transpose(1, 2).reshape(batch, time_steps, self.heads * self.head_dim)
        return self.o_proj(merged)


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        width, hidden = config['hiddenSize'], config['intermediateSize']
        self.gate_proj = nn.Linear(width, hidden, bias=False)
        self.up_proj = nn.Linear(width, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, width, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.input_layernorm = RMSNorm(config['hiddenSize'], config['rmsNormEps'])
        self.self_attn = Attention(config)
        self.post_attention_layernorm = RMSNorm(config['hiddenSize'], config['rmsNormEps'])
        self.mlp = MLP(config)

    def forward(self, x, cos, sin, cache, layer):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, cache, layer)
        return x + self.mlp(self.post_attention_layernorm(x))


class Backbone(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config['vocabSize'], config['hiddenSize'])
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config['numHiddenLayers']))
        self.norm = RMSNorm(config['hiddenSize'], config['rmsNormEps'])


class KeyValueCache:
    def __init__(self, layers):
        self.keys = [None] * layers
        self.values = [None] * layers

    def length(self, layer):
        return 0 if self.keys[layer] is None else self.keys[layer].shape[2]

    def append(self, layer, key, value):
        if self.keys[layer] is None:
            self.keys[layer], self.values[layer] = key, value
        else:
            self.keys[layer] = torch.cat([self.keys[layer], key], dim=2)
            self.values[layer] = torch.cat([self.values[layer], value], dim=2)
        return self.keys[layer], self.values[layer]


class LlamaPeer(nn.Module):
    """`LlamaForCausalLM` with tied embeddings, no biases, default RoPE (what the presets are)."""

    def __init__(self, config):
        super().__init__()
        for field, expected in [('architecture', 'llama'), ('tieWordEmbeddings', True), ('attentionBias', False),
                                ('mlpBias', False), ('queryKeyNorm', False), ('ropeScaling', None), ('slidingWindow', None)]:
            if config.get(field) != expected:
                raise ValueError(f'the peer implements {field}={expected!r}, the configuration has {config.get(field)!r}')
        self.config = config
        self.model = Backbone(config)
        half = config['headDim'] // 2
        exponent = torch.arange(0, config['headDim'], 2, dtype=torch.int64).float() / config['headDim']
        self.register_buffer('inverse_frequency', 1.0 / (config['ropeTheta'] ** exponent), persistent=False)
        assert self.inverse_frequency.shape[0] == half

    def rotary(self, positions):
        """cos, sin of `positions` [time]: each [1, 1, time, headDim]."""
        frequencies = torch.outer(positions.float(), self.inverse_frequency)
        embedding = torch.cat((frequencies, frequencies), dim=-1)
        return embedding.cos()[None, None], embedding.sin()[None, None]

    def forward(self, input_ids, cache=None):
        past = 0 if cache is None else cache.length(0)
        positions = torch.arange(past, past + input_ids.shape[1])
        cos, sin = self.rotary(positions)
        x = self.model.embed_tokens(input_ids)
        for index, layer in enumerate(self.model.layers):
            x = layer(x, cos, sin, cache, index)
        x = self.model.norm(x)
        return x @ self.model.embed_tokens.weight.T  # [batch, time, vocab]

    def initialise(self, seed):
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, parameter in self.named_parameters():
                if name.endswith('norm.weight'):
                    parameter.fill_(1.0)
                else:
                    parameter.normal_(0.0, self.config['initializerRange'], generator=generator)


def load_peer(config, weights_path, seed=0):
    """A peer model with the weights of `weights_path` (safetensors with Hugging Face names), or seeded ones."""
    model = LlamaPeer(config)
    batch = {}
    if weights_path:
        tensors = read_safetensors(weights_path)
        batch = {name[len('__batch__.'):]: tensor for name, tensor in tensors.items() if name.startswith('__batch__.')}
        state = {name: tensor for name, tensor in tensors.items() if not name.startswith('__batch__.')}
        model.load_state_dict(state, strict=True)
    else:
        model.initialise(seed)
    return model, batch


SAFETENSORS_DTYPES = {'F32': torch.float32, 'I32': torch.int32, 'I64': torch.int64}


def read_safetensors(path):
    """A safetensors file (F32/I32/I64) as a dict of tensors: 8-byte header length, JSON header, data."""
    with open(path, 'rb') as file:
        contents = file.read()
    (header_length,) = struct.unpack('<Q', contents[:8])
    header = json.loads(contents[8:8 + header_length])
    data = memoryview(contents)[8 + header_length:]
    tensors = {}
    for name, info in header.items():
        if name == '__metadata__':
            continue
        begin, end = info['data_offsets']
        dtype = SAFETENSORS_DTYPES[info['dtype']]
        tensors[name] = torch.frombuffer(bytearray(data[begin:end]), dtype=dtype).reshape(info['shape']) if end > begin else torch.empty(info['shape'], dtype=dtype)
    return tensors


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 == 1 else (ordered[middle - 1] + ordered[middle]) / 2


def timed(function):
    begin = time.perf_counter()
    result = function()
    return result, (time.perf_counter() - begin) * 1000.0


def environment():
    return {'torch': torch.__version__, 'threads': torch.get_num_threads(), 'mkldnn': torch.backends.mkldnn.is_available(),
            'blas': 'mkl' if torch.backends.mkl.is_available() else 'other'}


def assert_finite(value, what):
    if not math.isfinite(value):
        raise ValueError(f'{what} is {value}')
