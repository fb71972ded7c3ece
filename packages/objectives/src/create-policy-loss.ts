import * as tf from '@tensorflow/tfjs-core'
import { createNamedFactories, InvalidArgumentError } from '@ludic/core'
import { createCispoLoss, type CispoOptions } from './cispo-loss.js'
import { createDppoLoss, type DppoOptions } from './dppo-loss.js'
import { createDroLoss, type DroOptions } from './dro-loss.js'
import { createGmpoLoss, type GmpoOptions } from './gmpo-loss.js'
import { createGspoLoss, type GspoOptions } from './gspo-loss.js'
import { createPolicyGradientLoss, type PolicyGradientOptions } from './policy-gradient-loss.js'
import type { PolicyLoss } from './policy-loss.js'
import { createPpoClipLoss, type PpoClipOptions } from './ppo-clip-loss.js'
import { createRlPlusLoss, type RlPlusOptions } from './rl-plus-loss.js'
import { createSapoLoss, type SapoOptions } from './sapo-loss.js'
import { createTruncatedPpoLoss, type TruncatedPpoOptions } from './truncated-ppo.js'

/** Options of each policy loss, by name. */
export interface PolicyLossOptionsByName {
  'ppo-clip': PpoClipOptions
  'truncated-ppo': TruncatedPpoOptions
  gspo: GspoOptions
  cispo: CispoOptions
  pg: PolicyGradientOptions
  gpg: PolicyGradientOptions
  dro: DroOptions
  gmpo: GmpoOptions
  sapo: SapoOptions
  'dppo-tv': DppoOptions
  'dppo-kl': DppoOptions
  'rl-plus': RlPlusOptions
}
export type PolicyLossName = keyof PolicyLossOptionsByName

/** Makes a policy loss from its options (`undefined` when the caller gave none); the factory parses them. */
export type PolicyLossFactory<Options = unknown> = (options?: Options) => PolicyLoss

const builtIns: { [Name in PolicyLossName]: (options: PolicyLossOptionsByName[Name] | undefined) => PolicyLoss } = {
  'ppo-clip': (options) => createPpoClipLoss(options),
  'truncated-ppo': (options) => createTruncatedPpoLoss(options as TruncatedPpoOptions),
  gspo: (options) => createGspoLoss(options),
  cispo: (options) => createCispoLoss(options),
  pg: (options) => createPolicyGradientLoss(options, 'pg'),
  gpg: (options) => createPolicyGradientLoss(options, 'gpg'),
  dro: (options) => createDroLoss(options),
  gmpo: (options) => createGmpoLoss(options),
  sapo: (options) => createSapoLoss(options),
  'dppo-tv': (options) => createDppoLoss('tv', options),
  'dppo-kl': (options) => createDppoLoss('kl', options),
  'rl-plus': (options) => registeredRlPlusLoss(options),
}

/** The built-in policy-loss names, with the verl function each reproduces in the README (`policyLosses.names()` adds the registered ones). */
export const policyLossNames = Object.keys(builtIns) as PolicyLossName[]

const factories = createNamedFactories<PolicyLossFactory<never>>(
  {
    kind: 'policy loss',
    factoryShape: '(options) => PolicyLoss',
    unknown: (known) => `is not a registered policy loss; known: ${known}`,
  },
  builtIns,
)

/**
 * The options argument of `createPolicyLoss(name, …)` and `policyLosses.create(name, …)`: typed for a built-in
 * name (required for `truncated-ppo`), anything its factory parses for a registered one.
 */
export type PolicyLossOptionsArgument<Name extends string> = Name extends PolicyLossName
  ? Name extends 'truncated-ppo'
    ? [options: PolicyLossOptionsByName[Name]]
    : [options?: PolicyLossOptionsByName[Name]]
  : [options?: unknown]

/**
 * Adds a policy loss to the registry under `name`, so `policyLosses.create(name, options)` and
 * `createPolicyLoss(name, options)` make it (a run config can then name it: `policyLoss: { name }`). An empty
 * name, a name already taken (built-in or registered) and a factory that is not a function are an
 * `InvalidArgumentError`. Register once per process, when your module is imported.
 *
 * ```ts
 * registerPolicyLoss('ppo-clip-tight', (options?: PpoClipOptions) => createPpoClipLoss({ clipLow: 0.1, clipHigh: 0.1, ...options }))
 * const policyLoss = policyLosses.create('ppo-clip-tight')
 * ```
 */
export function registerPolicyLoss<Options>(name: string, factory: PolicyLossFactory<Options>): void {
  factories.register(name, factory)
}

/** The policy losses by name: the built-in ones and those added with `registerPolicyLoss`. */
export const policyLosses = {
  /** Makes the policy loss registered under `name`; an unknown name is an error that lists the known ones. */
  create: <Name extends string>(name: Name, ...options: PolicyLossOptionsArgument<Name>): PolicyLoss => createByName(name, options[0]),
  /** The registered names, built-in ones first, then in order of registration. */
  names: (): string[] => factories.names(),
}

function createByName(name: string, options: unknown): PolicyLoss {
  const factory = factories.get(name)
  const policyLoss = (factory as PolicyLossFactory)(options) // each factory parses its own options
  if (typeof policyLoss !== 'function') {
    throw new InvalidArgumentError({
      argument: 'name',
      value: name,
      message: `its registered factory returned ${policyLoss === null ? 'null' : typeof policyLoss}, not a policy loss function (inputs) => { loss, metrics, clippedTokens }`,
    })
  }
  return policyLoss
}

/**
 * Makes the policy loss `name` from its options (a zod-checked object; see each loss's schema for the
 * defaults): a built-in one or one added with `registerPolicyLoss` (the same as `policyLosses.create`). The loss
 * is a function `(inputs) => { loss, metrics, clippedTokens }` that reads nothing from the device;
 * `readLossMetrics(metrics)` reads the metrics after the step.
 *
 * ```ts
 * const policyLoss = createPolicyLoss('ppo-clip', { clipLow: 0.2, clipHigh: 0.28 })
 * const { loss, metrics } = policyLoss({ logprobs, oldLogprobs, advantages, mask }) // inside computeGradients
 * const { clipFraction } = await readLossMetrics(metrics) // after the step
 * ```
 */
export function createPolicyLoss<Name extends string>(name: Name, ...options: PolicyLossOptionsArgument<Name>): PolicyLoss {
  return createByName(name, options[0])
}

/**
 * RL-PLUS (`createRlPlusLoss`) as a `PolicyLoss`: `inputs.externalMask` marks the external tokens; without it
 * every token is internal (no external data: Eq. 7's external sum is empty), through an all-false mask freed
 * after the call.
 */
function registeredRlPlusLoss(options: RlPlusOptions | undefined): PolicyLoss {
  const rlPlus = createRlPlusLoss(options)
  return (inputs) => {
    if (inputs?.externalMask !== undefined) return rlPlus({ ...inputs, externalMask: inputs.externalMask })
    const logprobs = inputs?.logprobs
    if (!(logprobs instanceof tf.Tensor)) return rlPlus(inputs as never) // its checks name the bad input
    const internalOnly = tf.zeros(logprobs.shape, 'bool')
    try {
      return rlPlus({ ...inputs, externalMask: internalOnly })
    } finally {
      internalOnly.dispose()
    }
  }
}
