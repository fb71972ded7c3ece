"""Writes the safetensors fixtures that packages/tensors/src/safetensors tests compare against.

The files are made by Hugging Face's own implementation (the `safetensors` Python package, whose writer
is the reference Rust crate), so the TypeScript writer is checked byte for byte against it and the reader
against files it did not write itself. F16 values are rounded by numpy (`astype(np.float16)`), BF16 by
`ml_dtypes.bfloat16`: independent of the TypeScript rounding code they check.

Run from the repository root (the outputs are committed; rerun only to change them):

    python3 -m venv /tmp/venv-st
    /tmp/venv-st/bin/pip install safetensors numpy ml_dtypes huggingface_hub
    /tmp/venv-st/bin/python packages/tensors/scripts/make-safetensors-fixtures.py

Outputs, in packages/tensors/test/fixtures/safetensors/:
    all-dtypes.safetensors      every dtype Ludic reads, special values, a scalar, an empty tensor
    names-and-order.safetensors names whose sort order differs between UTF-16 and UTF-8, all dtypes mixed
    sharded/                    a transformers-style sharded checkpoint (4 shards and the index)
    expected-values.json        for each file: metadata, and per tensor dtype, shape, the float32 (or
                                integer) values written ("source") and the values stored ("stored")
"""

import json
import math
import os
import shutil

import ml_dtypes
import numpy as np
import safetensors
from huggingface_hub.serialization import split_state_dict_into_shards_factory
from safetensors.numpy import save_file

OUTPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "fixtures", "safetensors")

F16_SOURCE = [
    0.0, -0.0, 1.0, -1.0, 65504.0,
    65519.99,  # just below the rounding boundary: stays 65504
    65520.0,  # the boundary itself: ties to even, which is Infinity
    1.0e6, -1.0e6, math.inf, -math.inf, math.nan, -math.nan,
    2.0**-24,  # smallest subnormal
    2.0**-25,  # half of it: ties to even, which is zero
    1.5 * 2.0**-25,  # above the tie: smallest subnormal
    3.0 * 2.0**-25,  # tie between 2^-24 and 2^-23: even is 2^-23
    1023.0 * 2.0**-24,  # largest subnormal
    2.0**-14,  # smallest normal
    1.0 + 2.0**-11,  # tie: stays 1
    1.0 + 3.0 * 2.0**-11,  # tie: rounds up to even
    2049.0, 2051.0,  # ties in the integers
    1.0 / 3.0, math.pi, 1.0e-8, -1.0e-8,
]

BF16_SOURCE = [
    0.0, -0.0, 1.0, -1.0,
    1.0 + 2.0**-8,  # tie: stays 1
    1.0 + 3.0 * 2.0**-8,  # tie: rounds up to even
    3.3895313892515355e38,  # largest bfloat16
    3.4028234663852886e38,  # largest float32: rounds to Infinity
    math.inf, -math.inf, math.nan, -math.nan,
    1.0e-40,  # float32 subnormal
    1.401298464324817e-45,  # smallest float32 subnormal
    1.0 / 3.0, math.pi, -2.5e-3,
]

F32_SPECIAL = [0.0, -0.0, 1.0, -1.5, 1.401298464324817e-45, 3.4028234663852886e38, math.inf, -math.inf, math.nan, math.pi]


def float32(values):
    return np.array(values, dtype=np.float32)


def to_float16(array):
    with np.errstate(over="ignore"):  # values past 65504 becoming Infinity is the point
        return array.astype(np.float16)


def describe(tensors, sources):
    """Expected values for the JSON: float tensors as float32 bit patterns (NaN and -0 survive JSON)."""
    described = {}
    for name, array in tensors.items():
        dtype = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "int32": "I32", "int64": "I64"}[array.dtype.name]
        entry = {"dtype": dtype, "shape": list(array.shape)}
        if dtype in ("F32", "F16", "BF16"):
            entry["sourceBits"] = [int(bits) for bits in sources[name].reshape(-1).view(np.uint32)]
            entry["storedBits"] = [int(bits) for bits in array.astype(np.float32).reshape(-1).view(np.uint32)]
        elif dtype == "I32":
            entry["values"] = [int(value) for value in array.reshape(-1)]
        else:
            entry["values"] = [str(int(value)) for value in array.reshape(-1)]  # beyond 2^53: strings
        described[name] = entry
    return described


def main():
    shutil.rmtree(OUTPUT, ignore_errors=True)
    os.makedirs(os.path.join(OUTPUT, "sharded"))
    rng = np.random.default_rng(20240611)
    expected = {"safetensorsVersion": safetensors.__version__, "numpyVersion": np.__version__, "files": {}}

    # 1. Every dtype, special values, a scalar, an empty tensor; one metadata key (with two or more, Python
    #    writes them in hash order, which changes from run to run).
    f16_source = np.concatenate([float32(F16_SOURCE), rng.standard_normal(8).astype(np.float32)])
    bf16_source = np.concatenate([float32(BF16_SOURCE), rng.standard_normal(8).astype(np.float32)])
    sources = {
        "float32.special": float32(F32_SPECIAL).reshape(2, 5),
        "float16.rounding": f16_source,
        "bfloat16.rounding": bf16_source,
        "scalar": np.array(42.5, dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.float32),
        "tensor.3d": np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 8,
    }
    tensors = {
        "float32.special": sources["float32.special"],
        "float16.rounding": to_float16(f16_source),
        "bfloat16.rounding": bf16_source.astype(ml_dtypes.bfloat16),
        "int32.limits": np.array([[-(2**31), 2**31 - 1, -1], [0, 1, 123456789]], dtype=np.int32),
        "int64.limits": np.array([-(2**63), 2**63 - 1, 2**53 + 1, -5], dtype=np.int64),
        "scalar": sources["scalar"],
        "empty": sources["empty"],
        "tensor.3d": sources["tensor.3d"],
    }
    metadata = {"format": "np"}
    save_file(tensors, os.path.join(OUTPUT, "all-dtypes.safetensors"), metadata=metadata)
    expected["files"]["all-dtypes.safetensors"] = {"metadata": metadata, "tensors": describe(tensors, sources)}

    # 2. Names sorted by UTF-8 bytes (U+FF21 before U+1F600, the reverse of UTF-16 order), all dtypes mixed,
    #    no metadata.
    names = ["b", "a", "B", "a.10", "a.2", "\u00e9", "z", "\U0001f600", "\uff21", "with \"quotes\" and \\ and \n"]
    sources = {name: rng.standard_normal(3).astype(np.float32) for name in names}
    tensors = dict(sources)
    sources["half"] = rng.standard_normal(5).astype(np.float32)
    tensors["half"] = to_float16(sources["half"])
    sources["brain"] = rng.standard_normal(5).astype(np.float32)
    tensors["brain"] = sources["brain"].astype(ml_dtypes.bfloat16)
    tensors["ids"] = np.array([3, 1, 4, 1, 5], dtype=np.int32)
    tensors["positions"] = np.arange(6, dtype=np.int64).reshape(2, 3)
    save_file(tensors, os.path.join(OUTPUT, "names-and-order.safetensors"))
    expected["files"]["names-and-order.safetensors"] = {"metadata": {}, "tensors": describe(tensors, sources)}

    # 3. A sharded checkpoint as transformers' save_pretrained writes it: huggingface_hub's shard split,
    #    {"format": "pt"} in every shard, the index as json.dumps(indent=2, sort_keys=True) + "\n".
    max_shard_bytes = 100
    sources = {
        "model.embed_tokens.weight": rng.standard_normal((4, 4)).astype(np.float32),
        "model.layers.0.self_attn.q_proj.weight": rng.standard_normal((4, 8)).astype(np.float32),
        "model.layers.0.mlp.up_proj.weight": rng.standard_normal((8, 8)).astype(np.float32),  # 128 F16 bytes: own shard
        "model.norm.weight": np.ones(8, dtype=np.float32),
        "lm_head.weight": rng.standard_normal((4, 4)).astype(np.float32),
    }
    state_dict = {
        "model.embed_tokens.weight": sources["model.embed_tokens.weight"],
        "model.layers.0.self_attn.q_proj.weight": sources["model.layers.0.self_attn.q_proj.weight"].astype(ml_dtypes.bfloat16),
        "model.layers.0.mlp.up_proj.weight": to_float16(sources["model.layers.0.mlp.up_proj.weight"]),
        "model.norm.weight": sources["model.norm.weight"],
        "lm_head.weight": sources["lm_head.weight"],
        "model.position_ids": np.arange(4, dtype=np.int64).reshape(1, 4),
    }
    split = split_state_dict_into_shards_factory(
        state_dict,
        get_storage_size=lambda array: array.nbytes,
        filename_pattern="model{suffix}.safetensors",
        max_shard_size=max_shard_bytes,
    )
    for file, names in split.filename_to_tensors.items():
        save_file({name: state_dict[name] for name in names}, os.path.join(OUTPUT, "sharded", file), metadata={"format": "pt"})
    total_parameters = sum(int(array.size) for array in state_dict.values())
    index = {"metadata": {"total_parameters": total_parameters, **split.metadata}, "weight_map": split.tensor_to_filename}
    with open(os.path.join(OUTPUT, "sharded", "model.safetensors.index.json"), "w", encoding="utf-8") as file:
        file.write(json.dumps(index, indent=2, sort_keys=True) + "\n")
    expected["files"]["sharded"] = {
        "maxShardBytes": max_shard_bytes,
        "order": list(state_dict.keys()),
        "files": list(split.filename_to_tensors.keys()),
        "metadata": {"format": "pt"},
        "tensors": describe(state_dict, sources),
    }

    with open(os.path.join(OUTPUT, "expected-values.json"), "w", encoding="utf-8") as file:
        file.write(json.dumps(expected, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
