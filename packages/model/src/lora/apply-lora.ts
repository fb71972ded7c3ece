import * as tf from '@tensorflow/tfjs-core'
import { createRandom, deriveSeed, InvalidArgumentError, LudicError, parseArgument } from '@ludic/core'
import { z } from 'zod'
import type { CausalLanguageModel, LinearAdapter } from '../model/causal-language-model.js'
import { matchesParameterNamePattern } from '../parameter-name-pattern.js'

export const loraOptionsSchema = z
  .object({
    /** Rank r of the update `B·A`. Default: 8 (PEFT's). */
    rank: z.number().int().positive().default(8),
    /** The update is scaled by alpha / r (alpha / √r with `useRslora`). Default: 8 (PEFT's). */
    alpha: z.number().positive().default(8),
    /** Dropout on the adapter's input, in training mode only. Default: 0. */
    dropout: z.number().min(0).lt(1).default(0),
    /**
     * Which linear layers get an adapter (layer names are parameter names without `.weight`,
     * `model.layers.0.self_attn.q_proj`):
     * - module names, PEFT's list form: each matches a layer whose name ends with it as whole segments
     *   (`'q_proj'` matches `model.layers.0.self_attn.q_proj`, `'self_attn.q_proj'` too), i.e. the
     *   `ParameterNamePattern` `'**.' + module` (so globs work: `'*_proj'`);
     * - `'all-linear'`: every projection, not `lm_head`;
     * - a `RegExp`, tested against the layer name as every `ParameterNamePattern` (it searches; anchor it with
     *   `^…$` for PEFT's full-match string form, which is how `loadLoraAdapter` reads one).
     * Default: PEFT's for the architecture: `['q_proj', 'v_proj']`, GPT-2 `['c_attn']`.
     */
    targetModules: z.union([z.array(z.string().min(1)).min(1), z.literal('all-linear'), z.instanceof(RegExp)]).optional(),
    /** Seed of A's initialisation (Kaiming-uniform, as PEFT); B starts at zero so the model is unchanged. Default: 0. */
    seed: z.number().int().default(0),
    /** Rank-stabilised scaling alpha / √r (Kalajdzievski, 2023). Default: false. */
    useRslora: z.boolean().default(false),
    /** Freeze every other parameter, as PEFT does. Default: true. */
    freezeBase: z.boolean().default(true),
  })
  .strict()
export type LoraOptions = z.input<typeof loraOptionsSchema>
export type LoraConfig = Omit<z.output<typeof loraOptionsSchema>, 'targetModules'> & { targetModules: string[] | 'all-linear' | RegExp }

/** LoRA adapters attached to a model (see `applyLora`). */
export interface LoraAdapters {
  readonly config: LoraConfig
  /** The adapted linear layers, e.g. `model.layers.0.self_attn.q_proj`. */
  readonly layers: readonly string[]
  /** `alpha / rank` (or `alpha / √rank`). */
  readonly scale: number
  /** Whether `B·A·scale` is currently added into the base weights. */
  readonly merged: boolean
  /** The adapters' parameters (`<layer>.lora_A.weight` `[r, in]`, `<layer>.lora_B.weight` `[out, r]`). */
  parameters(): Map<string, tf.Variable>
  /** Adds `scale · B·A` to each base weight (the adapter path is then skipped): inference at base speed. */
  merge(): void
  /** Subtracts it again. */
  unmerge(): void
  /** Detaches the adapters (unmerging first) and frees their parameters; the base parameters are unfrozen. */
  remove(): void
}

/**
 * Low-rank adaptation (Hu et al., 2021, "LoRA"): each chosen linear layer computes
 * `y = x Wᵀ + b + scale · dropout(x) Aᵀ Bᵀ` with `A` `[r, in]` Kaiming-uniform and `B` `[out, r]` zero, as
 * PEFT initialises them, so the adapted model starts equal to the base. The adapter parameters join
 * `model.parameters()` under PEFT's names without the `base_model.model.` prefix
 * (`model.layers.0.self_attn.q_proj.lora_A.weight`); by default every other parameter is frozen, so
 * `model.trainableParameters()` is the adapters'.
 */
export function applyLora(model: CausalLanguageModel, options: LoraOptions = {}): LoraAdapters {
  const parsed = parseArgument(loraOptionsSchema, options, 'options')
  const config: LoraConfig = { ...parsed, targetModules: parsed.targetModules ?? (model.config.architecture === 'gpt2' ? ['c_attn'] : ['q_proj', 'v_proj']) }
  const candidates = model.linearNames()
  const layers = candidates.filter((name) => isTarget(name, config.targetModules))
  if (layers.length === 0) {
    const modules = [...new Set(candidates.map((name) => name.split('.').at(-1)!))]
    throw new InvalidArgumentError({
      argument: 'options.targetModules',
      value: config.targetModules,
      message: `matches no linear layer; the model's are ${modules.join(', ')}`,
    })
  }
  for (const layer of layers) {
    if (model.linearAdapters().has(layer)) throw new InvalidArgumentError({ argument: 'model', value: layer, message: 'already has an adapter on this layer' })
  }
  const scale = config.useRslora ? config.alpha / Math.sqrt(config.rank) : config.alpha / config.rank
  if (config.freezeBase) model.freeze('**')
  const variables = new Map<string, tf.Variable>()
  const adapters: LoraLayer[] = []
  let dropoutCalls = 0
  for (const layer of layers) {
    const { inputs, outputs, inputMajor } = model.linearLayout(layer)
    const bound = 1 / Math.sqrt(inputs) // kaiming_uniform_(a=√5): gain √(1/3) · √(3 / fan_in)
    const random = createRandom(deriveSeed(config.seed, layer, 'lora_A'))
    const initialA = tf.tensor2d(
      Float32Array.from({ length: config.rank * inputs }, () => (2 * random.nextFloat() - 1) * bound),
      [config.rank, inputs],
    )
    const initialB = tf.zeros([outputs, config.rank])
    const a = model.addParameter(`${layer}.lora_A.weight`, initialA)
    const b = model.addParameter(`${layer}.lora_B.weight`, initialB)
    tf.dispose([initialA, initialB])
    variables.set(`${layer}.lora_A.weight`, a)
    variables.set(`${layer}.lora_B.weight`, b)
    const adapter: LoraLayer = {
      layer,
      inputMajor,
      a,
      b,
      merged: false,
      apply(x, training) {
        return tf.tidy(() => {
          const input = training && config.dropout > 0 ? tf.dropout(x, config.dropout, undefined, deriveSeed(config.seed, 'dropout', dropoutCalls++)) : x
          const down = tf.matMul(input, a, false, true) // [rows, r]
          return tf.mul(tf.matMul(down, b, false, true), scale) as tf.Tensor2D // [rows, out]
        })
      },
    }
    adapters.push(adapter)
    model.setAdapter(layer, adapter)
  }

  let merged = false
  let removed = false
  const shift = (sign: 1 | -1): void => {
    for (const adapter of adapters) {
      const weight = model.parameter(`${adapter.layer}.weight`)
      tf.tidy(() => {
        const update = tf.mul(tf.matMul(adapter.b, adapter.a), sign * scale) // [out, in]
        weight.assign(tf.add(weight, adapter.inputMajor ? tf.transpose(update) : update)) // GPT-2's Conv1D stores [in, out]
      })
      adapter.merged = sign === 1
    }
    merged = sign === 1
  }
  const checkAttached = (): void => {
    if (removed) throw new LudicError('the LoRA adapters were removed')
  }
  return {
    config,
    layers,
    scale,
    get merged() {
      return merged
    },
    parameters: () => new Map(variables),
    merge() {
      checkAttached()
      if (!merged) shift(1)
    },
    unmerge() {
      checkAttached()
      if (merged) shift(-1)
    },
    remove() {
      if (removed) return
      if (merged) shift(-1)
      for (const adapter of adapters) {
        model.setAdapter(adapter.layer, undefined)
        model.removeParameter(`${adapter.layer}.lora_A.weight`)
        model.removeParameter(`${adapter.layer}.lora_B.weight`)
      }
      if (config.freezeBase) model.unfreeze('**')
      removed = true
    },
  }
}

interface LoraLayer extends LinearAdapter {
  layer: string
  inputMajor: boolean
  a: tf.Variable
  b: tf.Variable
  merged: boolean
}

/** PEFT's matching of module names (the name or a `.`-separated suffix), as `ParameterNamePattern`s. */
function isTarget(name: string, targets: LoraConfig['targetModules']): boolean {
  if (targets === 'all-linear') return name !== 'lm_head'
  if (targets instanceof RegExp) return matchesParameterNamePattern(name, targets)
  return matchesParameterNamePattern(
    name,
    targets.map((module) => `**.${module}`),
  )
}
