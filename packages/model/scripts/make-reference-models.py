"""Makes tiny random checkpoints of every architecture @ludic/model supports, with transformers, and the
reference outputs the conformance test (test/hugging-face-conformance.test.ts) compares against.

    python3 -m venv /tmp/venv-model && /tmp/venv-model/bin/pip install torch==2.13.0+cpu transformers safetensors
    /tmp/venv-model/bin/python packages/model/scripts/make-reference-models.py

For each variant, test/fixtures/<variant>/ gets what `save_pretrained` writes (config.json,
model.safetensors, generation_config.json) and references.safetensors / references.json:
  single.input_ids [1, 12]                  one unpadded sequence
  single.logits    [1, 12, vocab]           its logits
  batch.input_ids, batch.attention_mask,    three left-padded rows (lengths 12, 7, 4) and the
  batch.position_ids [3, 12]                positions generate() would use (cumsum(mask) - 1)
  batch.logits     [3, 12, vocab]           logits (padded positions are not compared)
  greedy.sequences [3, 12 + 8]              greedy continuation of the batch (8 new tokens, no EOS)
Weights are drawn from a fixed seed with a larger spread than transformers' default (and norm weights and
biases perturbed too), so every part of the computation changes the logits visibly.
"""

import json
import pathlib

import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "test" / "fixtures"

COMMON = dict(
    vocab_size=64,
    hidden_size=32,
    intermediate_size=48,
    num_hidden_layers=2,
    num_attention_heads=4,
    max_position_embeddings=64,
    rms_norm_eps=1e-6,
    initializer_range=0.2,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=0,
)

VARIANTS = {
    # Llama 2 / SmolLM style: grouped-query attention, tied embeddings.
    "llama-gqa-tied": dict(model_type="llama", num_key_value_heads=2, tie_word_embeddings=True),
    # Llama 3.1 style: rope_scaling llama3 (original context 16, so all three frequency bands occur),
    # large theta, untied embeddings, attention and MLP biases.
    "llama3-rope-scaling": dict(
        model_type="llama",
        num_key_value_heads=2,
        tie_word_embeddings=False,
        rope_theta=500000.0,
        rope_scaling=dict(rope_type="llama3", factor=4.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=16),
        attention_bias=True,
        mlp_bias=True,
    ),
    # Qwen2: q/k/v biases, GQA, untied.
    "qwen2": dict(model_type="qwen2", num_key_value_heads=2, tie_word_embeddings=False, rope_theta=1000000.0),
    # Qwen3: q/k RMSNorm, explicit head_dim (16, not hidden / heads = 8), tied.
    "qwen3": dict(model_type="qwen3", num_key_value_heads=2, head_dim=16, tie_word_embeddings=True),
    # Mistral: sliding window of 5 tokens (shorter than the inputs), GQA, untied.
    "mistral": dict(model_type="mistral", num_key_value_heads=1, sliding_window=5, tie_word_embeddings=False),
    # Linear RoPE scaling, multi-head attention, weights stored in bfloat16.
    "llama-bf16": dict(model_type="llama", num_key_value_heads=4, tie_word_embeddings=True, rope_scaling=dict(rope_type="linear", factor=2.0)),
    # GPT-2: LayerNorm, learned positions, fused c_attn, Conv1D weights [in, out], GELU (tanh), tied.
    "gpt2": dict(model_type="gpt2"),
}
GPT2 = dict(
    vocab_size=64, n_embd=32, n_inner=48, n_layer=2, n_head=4, n_positions=64, layer_norm_epsilon=1e-5,
    initializer_range=0.2, bos_token_id=1, eos_token_id=2, pad_token_id=0, tie_word_embeddings=True,
)
BF16 = {"llama-bf16"}
NEW_TOKENS = 8


def make_config(spec):
    spec = dict(spec)
    model_type = spec.pop("model_type")
    if model_type == "gpt2":
        return transformers.AutoConfig.for_model("gpt2", **GPT2, **spec)
    return transformers.AutoConfig.for_model(model_type, **COMMON, **spec)


def perturb(model, generator):
    """Norm weights around 1 and non-zero biases, so they matter."""
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("norm.weight") or (".ln_" in name and name.endswith(".weight")):
                parameter.copy_(1 + 0.2 * torch.randn(parameter.shape, generator=generator))
            elif name.endswith(".bias"):
                parameter.copy_(0.2 * torch.randn(parameter.shape, generator=generator))


def inputs(generator, vocab):
    lengths = [12, 7, 4]
    time = max(lengths)
    single = torch.randint(3, vocab, (1, time), generator=generator)
    ids = torch.zeros((len(lengths), time), dtype=torch.long)
    mask = torch.zeros((len(lengths), time), dtype=torch.long)
    for row, length in enumerate(lengths):
        ids[row, time - length :] = torch.randint(3, vocab, (length,), generator=generator)
        mask[row, time - length :] = 1
    positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
    return single, ids, mask, positions


def make_lora_reference():
    """A PEFT LoRA adapter on the qwen2 fixture (q_proj, v_proj, down_proj; r 4, alpha 8; B random so it
    matters), saved with PEFT's save_pretrained, and the adapted model's logits on the padded batch."""
    from peft import LoraConfig, get_peft_model

    base = AutoModelForCausalLM.from_pretrained(FIXTURES / "qwen2", dtype=torch.float32, attn_implementation="eager").eval()
    generator = torch.Generator().manual_seed(77)
    torch.manual_seed(77)
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"], lora_dropout=0.0, task_type="CAUSAL_LM")
    model = get_peft_model(base, config).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.copy_(0.3 * torch.randn(parameter.shape, generator=generator))
    directory = FIXTURES / "qwen2-lora"
    model.save_pretrained(directory)
    (directory / "README.md").unlink(missing_ok=True)  # PEFT's model card template
    adapter_config = json.loads((directory / "adapter_config.json").read_text())
    adapter_config["base_model_name_or_path"] = "../qwen2"  # not this machine's path
    (directory / "adapter_config.json").write_text(json.dumps(adapter_config, indent=2, sort_keys=True) + "\n")
    references = load_file(FIXTURES / "qwen2" / "references.safetensors")
    ids = references["batch.input_ids"].long()
    mask = references["batch.attention_mask"].long()
    positions = references["batch.position_ids"].long()
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits
    save_file({"batch.logits": logits.contiguous()}, directory / "references.safetensors", metadata={"format": "pt"})
    import peft

    print("qwen2-lora", f"peft {peft.__version__}")
    return {"model_type": "qwen2", "dtype": "float32", "parameters": sum(p.numel() for n, p in model.named_parameters() if "lora_" in n), "new_tokens": 0, "peft": peft.__version__}


def main():
    torch.manual_seed(0)
    summary = {}
    for index, (name, spec) in enumerate(VARIANTS.items()):
        generator = torch.Generator().manual_seed(1000 + index)
        torch.manual_seed(1000 + index)
        config = make_config(spec)
        model = AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
        perturb(model, generator)
        directory = FIXTURES / name
        directory.mkdir(parents=True, exist_ok=True)
        if name in BF16:
            # Save in bfloat16, then load it back in float32 (as Ludic reads BF16): casting the model back
            # would leave the rotary inverse frequencies rounded to bfloat16.
            model.to(torch.bfloat16).save_pretrained(directory)
            model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32, attn_implementation="eager").eval()
        else:
            model.save_pretrained(directory)

        single, ids, mask, positions = inputs(generator, config.vocab_size)
        with torch.no_grad():
            single_logits = model(input_ids=single).logits
            batch_logits = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits
            greedy = model.generate(
                input_ids=ids,
                attention_mask=mask,
                max_new_tokens=NEW_TOKENS,
                do_sample=False,
                eos_token_id=None,
                pad_token_id=0,
            )
        save_file(
            {
                "single.input_ids": single.to(torch.int32).contiguous(),
                "single.logits": single_logits.contiguous(),
                "batch.input_ids": ids.to(torch.int32).contiguous(),
                "batch.attention_mask": mask.to(torch.int32).contiguous(),
                "batch.position_ids": positions.to(torch.int32).contiguous(),
                "batch.logits": batch_logits.contiguous(),
                "greedy.sequences": greedy.to(torch.int32).contiguous(),
            },
            directory / "references.safetensors",
            metadata={"format": "pt"},
        )
        summary[name] = {
            "model_type": config.model_type,
            "dtype": "bfloat16" if name in BF16 else "float32",
            "parameters": sum(p.numel() for p in model.parameters()),
            "new_tokens": NEW_TOKENS,
        }
        print(name, summary[name])
    summary["qwen2-lora"] = make_lora_reference()
    (FIXTURES / "references.json").write_text(
        json.dumps({"transformers": transformers.__version__, "torch": torch.__version__, "variants": summary}, indent=2) + "\n"
    )


if __name__ == "__main__":
    main()
