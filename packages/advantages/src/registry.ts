import { advantageNeedSchema, createNamedFactories, InvalidArgumentError, type AdvantageEstimatorV1 } from '@ludic/core'
import { createDrGrpo, type DrGrpoOptions } from './dr-grpo.js'
import { createGae, type GaeOptions } from './gae.js'
import { createGigpo, type GigpoOptions } from './gigpo.js'
import { createGpg, type GpgOptions } from './gpg.js'
import { createGrpo, type GrpoOptions } from './grpo.js'
import { createGrpoPassK, type GrpoPassKOptions } from './grpo-pass-k.js'
import { createOpo, type OpoOptions } from './opo.js'
import { createRae, type RaeOptions } from './rae.js'
import { createReinforcePlusPlus, type ReinforcePlusPlusOptions } from './reinforce-plus-plus.js'
import { createReinforcePlusPlusBaseline, type ReinforcePlusPlusBaselineOptions } from './reinforce-plus-plus-baseline.js'
import { createRemax, type RemaxOptions } from './remax.js'
import { createRloo, type RlooOptions } from './rloo.js'
import { createTurnReinforce, type TurnReinforceOptions } from './turn-reinforce.js'

/** Makes an estimator from its options (`undefined` when the caller gave none). */
export type AdvantageEstimatorFactory<Options = unknown> = (options?: Options) => AdvantageEstimatorV1

/** The options of each built-in estimator, by registry name. */
export interface BuiltInAdvantageEstimatorOptions {
  gae: GaeOptions
  grpo: GrpoOptions
  'dr-grpo': DrGrpoOptions
  rloo: RlooOptions
  'reinforce++': ReinforcePlusPlusOptions
  'reinforce++-baseline': ReinforcePlusPlusBaselineOptions
  remax: RemaxOptions
  opo: OpoOptions
  'grpo-passk': GrpoPassKOptions
  gpg: GpgOptions
  rae: RaeOptions
  gigpo: GigpoOptions
  'turn-reinforce': TurnReinforceOptions
}

const builtIns: { [Name in keyof BuiltInAdvantageEstimatorOptions]: AdvantageEstimatorFactory<BuiltInAdvantageEstimatorOptions[Name]> } = {
  gae: createGae,
  grpo: createGrpo,
  'dr-grpo': createDrGrpo,
  rloo: createRloo,
  'reinforce++': createReinforcePlusPlus,
  'reinforce++-baseline': createReinforcePlusPlusBaseline,
  remax: createRemax,
  opo: createOpo,
  'grpo-passk': createGrpoPassK,
  gpg: createGpg,
  rae: createRae,
  gigpo: createGigpo,
  'turn-reinforce': createTurnReinforce,
}

const factories = createNamedFactories<AdvantageEstimatorFactory<never>>(
  { kind: 'advantage estimator', factoryShape: '(options) => AdvantageEstimatorV1', unknown: (known) => `unknown advantage estimator; known: ${known}` },
  builtIns,
)

/**
 * Adds an estimator to the registry under `name`, so `advantageEstimators.create(name, options)` makes
 * it (a trainer config can then name it). A name already taken is an `InvalidArgumentError`.
 */
export function registerAdvantageEstimator<Options>(name: string, factory: AdvantageEstimatorFactory<Options>): void {
  factories.register(name, factory)
}

/** The estimators by name: the built-in ones and those added with `registerAdvantageEstimator`. */
export const advantageEstimators = {
  /** Makes the estimator registered under `name`; an unknown name is an error that lists the known ones. */
  create: createByName as {
    <Name extends keyof BuiltInAdvantageEstimatorOptions>(name: Name, options?: BuiltInAdvantageEstimatorOptions[Name]): AdvantageEstimatorV1
    (name: string, options?: unknown): AdvantageEstimatorV1
  },
  /** The registered names, built-in ones first, then in order of registration. */
  names: (): string[] => factories.names(),
}

function createByName(name: string, options?: unknown): AdvantageEstimatorV1 {
  const factory = factories.get(name)
  const estimator = (factory as AdvantageEstimatorFactory)(options) // each factory parses its own options
  checkRequires(estimator, name)
  return estimator
}

/** A registered factory's `requires` must list known needs: a trainer refuses configurations by them. */
function checkRequires(estimator: AdvantageEstimatorV1, name: string): void {
  const requires: unknown = estimator?.requires
  if (requires === undefined) return
  const known = advantageNeedSchema.options
  if (!Array.isArray(requires) || requires.some((need) => !known.includes(need))) {
    throw new InvalidArgumentError({
      argument: 'name',
      value: name,
      message: `the estimator registered under this name declares requires ${JSON.stringify(requires)}: it must list batch fields among ${known.join(', ')}`,
    })
  }
}
