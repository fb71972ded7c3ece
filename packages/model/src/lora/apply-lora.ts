import * as tf from '@tensorflow/tfjs-core'
import { createRandom, deriveSeed, InvalidArgumentError, LudicError, parseArgument } from '@ludic/core'
import { z } from 'zod'
import type { CausalLanguageModel, LinearAdapter } from '../model/causal-language-model.js'
import { scoreWeightName } from '../heads/scalar-heads.js'
import { defaultMaxParameterBytes, formatBytes } from '../model/parameter-budget.js'
import { matchesParameterNamePattern } from '../parameter-name-pattern.js'
import { architectureOf } from '../model/architecture.js'

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
    /**
     * Freeze every other parameter, as PEFT does — except a value or reward head's `score.weight`, which PEFT trains
     * beside the adapters (a sequence-classification model's `score` is in its `modules_to_save`). Default: true.
     */
    freezeBase: z.boolean().default(true),
    /**
     * The most bytes the model's parameters and the adapters' together (float32) may take; more is refused
     * before anything is allocated. Default: `defaultMaxParameterBytes()`, half of the machine's memory (at
     * most 3 GiB on WebAssembly).
     */
    maxParameterBytes: z.number().positive().optional(),
  })
  .strict()
export type LoraOptions = z.input<typeof loraOptionsSchema>
export type LoraConfig = Omit<z.output<typeof loraOptionsSchema>, 'targetModules' | 'maxParameterBytes'> & { targetModules: string[] | 'all-linear' | RegExp }

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
  /** Detaches the adapters (unmerging first) and frees their parameters; the base parameters it froze are unfrozen. */
  remove(): void
}

/**
 * Low-rank adaptation (Hu et al., 2021, "LoRA"): each chosen linear layer computes
 * `y = x Wᵀ + b + scale · dropout(x) Aᵀ Bᵀ` with `A` `[r, in]` Kaiming-uniform and `B` `[out, r]` zero, as
 * PEFT initialises them, so the adapted model starts equal to the base. The adapter parameters join
 * `model.parameters()` under PEFT's names without the `base_model.model.` prefix
 * (`model.layers.0.self_attn.q_proj.lora_A.weight`); by default every other parameter is frozen, so
 * `model.trainableParameters()` is the adapters' — and a value or reward head's `score.weight`, which stays
 * trainable (PEFT trains a sequence-classification model's `score` head beside the adapters).
 *
 * The rank may be at most `min(in, out)` of every targeted layer (a larger one adds parameters, not capacity),
 * and the model's parameters plus the adapters' must fit `maxParameterBytes`: both are checked before anything
 * is allocated (an `InvalidArgumentError` on `options.rank`). Applying is all-or-nothing: if anything fails
 * part-way, the adapters attached so far are detached and freed and the base is unfrozen again.
 */
export function applyLora(model: CausalLanguageModel, options: LoraOptions = {}): LoraAdapters {
  return attachLora(model, planLora(model, options))
}

/** What `applyLora` will add, checked and sized, with nothing allocated yet (see `planLora`). */
export interface LoraPlan {
  readonly config: LoraConfig
  readonly scale: number
  /** Each adapted layer with its widths and weight layout (`model.linearLayout`). */
  readonly layers: readonly { layer: string; inputs: number; outputs: number; inputMajor: boolean }[]
}

/**
 * Checks LoRA options against a model and sizes the adapters, allocating nothing: the targets match linear
 * layers without adapters (with `attachLater`, adapters attached now are left for `attachLora` to find), the rank
 * is at most `min(in, out)` of each, and the parameters fit the budget.
 */
export function planLora(model: CausalLanguageModel, options: LoraOptions = {}, timing: { attachLater?: boolean } = {}): LoraPlan {
  const { maxParameterBytes, ...parsed } = parseArgument(loraOptionsSchema, options, 'options')
  const config: LoraConfig = { ...parsed, targetModules: parsed.targetModules ?? [...architectureOf(model.config).defaultLoraTargets] }
  const candidates = model.linearNames()
  const names = candidates.filter((name) => isTarget(name, config.targetModules))
  if (names.length === 0) {
    const modules = [...new Set(candidates.map((name) => name.split('.').at(-1)!))]
    throw new InvalidArgumentError({
      argument: 'options.targetModules',
      value: config.targetModules,
      message: `matches no linear layer; the model's are ${modules.join(', ')}`,
    })
  }
  // A plan for later (an adapter read while another is attached, to be swapped in) is checked again when attached.
  for (const layer of timing.attachLater === true ? [] : names) {
    if (model.linearAdapters().has(layer)) throw new InvalidArgumentError({ argument: 'model', value: layer, message: 'already has an adapter on this layer' })
  }
  const layers = names.map((layer) => ({ layer, ...model.linearLayout(layer) }))
  const narrowest = layers.reduce((narrow, layer) => (Math.min(layer.inputs, layer.outputs) < Math.min(narrow.inputs, narrow.outputs) ? layer : narrow))
  const maxRank = Math.min(narrowest.inputs, narrowest.outputs)
  if (config.rank > maxRank) {
    throw new InvalidArgumentError({
      argument: 'options.rank',
      value: config.rank,
      message: `must be at most ${maxRank}, min(in, out) of the narrowest targeted layer ${narrowest.layer} (in ${narrowest.inputs}, out ${narrowest.outputs}): B·A cannot have a higher rank`,
    })
  }
  const added = config.rank * layers.reduce((sum, layer) => sum + layer.inputs + layer.outputs, 0)
  const existing = model.numParameters
  const budget = maxParameterBytes ?? defaultMaxParameterBytes()
  if (4 * (existing + added) > budget) {
    throw new InvalidArgumentError({
      argument: 'options.rank',
      value: config.rank,
      message:
        `the adapters add ${added} parameters (${formatBytes(4 * added)} as float32) to the model's ${existing} (${formatBytes(4 * existing)}), ` +
        `more than maxParameterBytes (${formatBytes(budget)}; by default half of the machine's memory, at most 3 GiB on WebAssembly): ` +
        'lower the rank or the targets, or pass a larger maxParameterBytes',
    })
  }
  const scale = config.useRslora ? config.alpha / Math.sqrt(config.rank) : config.alpha / config.rank
  return { config, scale, layers }
}

/**
 * Attaches planned adapters: A Kaiming-uniform and B zero, or the values given by parameter name
 * (`<layer>.lora_A.weight` `[r, in]`, `<layer>.lora_B.weight` `[out, r]`, row-major), as `loadLoraAdapter`
 * passes them. All-or-nothing: on any failure everything done so far is undone before the error is rethrown.
 */
export function attachLora(model: CausalLanguageModel, plan: LoraPlan, values?: ReadonlyMap<string, Float32Array>): LoraAdapters {
  const { config, scale } = plan
  const variables = new Map<string, tf.Variable>()
  const adapters: LoraLayer[] = []
  /** The base parameters this call froze (those the caller had frozen stay frozen on `remove`). */
  const frozen: tf.Variable[] = []
  let dropoutCalls = 0
  try {
    if (config.freezeBase) {
      for (const [name, variable] of model.parameters()) {
        if (!variable.trainable || name === scoreWeightName) continue
        variable.trainable = false
        frozen.push(variable)
      }
    }
    for (const { layer, inputs, outputs, inputMajor } of plan.layers) {
      const nameA = `${layer}.lora_A.weight`
      const nameB = `${layer}.lora_B.weight`
      const bound = 1 / Math.sqrt(inputs) // kaiming_uniform_(a=√5): gain √(1/3) · √(3 / fan_in)
      const random = createRandom(deriveSeed(config.seed, layer, 'lora_A'))
      const initialA = tf.tensor2d(values?.get(nameA) ?? Float32Array.from({ length: config.rank * inputs }, () => (2 * random.nextFloat() - 1) * bound), [
        config.rank,
        inputs,
      ])
      const initialB = values?.has(nameB) === true ? tf.tensor2d(values.get(nameB)!, [outputs, config.rank]) : tf.zeros([outputs, config.rank])
      try {
        variables.set(nameA, model.addParameter(nameA, initialA))
        variables.set(nameB, model.addParameter(nameB, initialB))
      } finally {
        tf.dispose([initialA, initialB])
      }
      const a = variables.get(nameA)!
      const b = variables.get(nameB)!
      const adapter: LoraLayer = {
        layer,
        inputMajor,
        a,
        b,
        merged: false,
        stochastic: config.dropout > 0,
        apply(x, training) {
          return tf.tidy(() => {
            const input = training && config.dropout > 0 ? tf.dropout(x, config.dropout, undefined, deriveSeed(config.seed, 'dropout', dropoutCalls++)) : x
            const down = tf.matMul(input, a, false, true) // [rows, r]
            return tf.mul(tf.matMul(down, b, false, true), scale) as tf.Tensor2D // [rows, out]
          })
        },
      }
      model.setAdapter(layer, adapter)
      adapters.push(adapter)
    }
  } catch (error) {
    for (const adapter of adapters) model.setAdapter(adapter.layer, undefined)
    for (const name of variables.keys()) model.removeParameter(name)
    for (const variable of frozen) variable.trainable = true
    throw error
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
  const handle: LoraAdapters = {
    config,
    layers: plan.layers.map(({ layer }) => layer),
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
      for (const variable of frozen) if (!variable.isDisposed) variable.trainable = true
      removed = true
      const attached = attachedLoras.get(model)?.filter((entry) => entry.adapters !== handle) ?? []
      if (attached.length === 0) attachedLoras.delete(model)
      else attachedLoras.set(model, attached)
    },
  }
  attachedLoras.set(model, [...(attachedLoras.get(model) ?? []), { plan, adapters: handle }])
  return handle
}

/** The adapters `attachLora` attached to each model, with their plans (removed ones left out). */
const attachedLoras = new WeakMap<CausalLanguageModel, { plan: LoraPlan; adapters: LoraAdapters }[]>()

/**
 * The LoRA adapters attached to `model` by `applyLora`, `attachLora` or `attachLoraAdapter` (in the order attached),
 * each with its plan: what attaching the same adapters to another model of the same shape takes
 * (`attachLora(copy, plan, values)`, e.g. a frozen snapshot of a learner that trains an adapter). Empty when none are.
 */
export function attachedLoraAdapters(model: CausalLanguageModel): { plan: LoraPlan; adapters: LoraAdapters }[] {
  return [...(attachedLoras.get(model) ?? [])]
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
