import { readdirSync } from 'node:fs'
import { mkdir, rename } from 'node:fs/promises'
import { join } from 'node:path'
import { InvalidArgumentError, LudicError, ParseError } from '@ludic/core'
import {
  latestCheckpoint,
  listCheckpoints,
  loadTrainingCheckpoint,
  saveTrainingCheckpoint,
  type CausalLanguageModel,
  type LoadedTrainingCheckpoint,
} from '@ludic/model'
import type { StepMetrics } from './metrics-log.js'
import { ResumeError, type JsonValue, type RunState, type RunStateOptions } from './run-state.js'
import { trajectoriesFileName } from './trajectory-log.js'
import { createTrajectoryFile, type TrajectoryFile } from './trajectory-writer.js'

/** A run directory's state (see `RunState`): the Node entry's, registered in `node-platform.ts`. */
export function createRunDirectoryState(options: RunStateOptions & { directory: string }): RunState {
  const { directory, keepLast, model, optimizer, estimator, reference, referenceMoves = false, critic, notify, loggers } = options
  const weights = () => options.parameters ?? model.parameters()
  const trajectoryFile: TrajectoryFile = createTrajectoryFile(join(directory, trajectoriesFileName))
  /**
   * The newest checkpoint that loads; the newer ones that do not are then renamed out of the way. Undefined when there
   * is none; a `ResumeError` when there are some and none loads (they stay where they are, for the user to look at).
   */
  const loadNewest = async (runDirectory: string): Promise<LoadedTrainingCheckpoint | undefined> => {
    const checkpoints = await listCheckpoints(runDirectory)
    const broken: { step: number; path: string; error: Error }[] = []
    for (const { step, path } of [...checkpoints].reverse()) {
      try {
        const loaded = await loadTrainingCheckpoint(path, { parameters: weights(), optimizer })
        for (const newer of broken) {
          const aside = join(runDirectory, `broken-checkpoint-${newer.step}-${Date.now()}`)
          await rename(newer.path, aside)
          notify(`checkpoint-${newer.step} cannot be read (${newer.error.message}); set aside as ${aside}, resuming from checkpoint-${step}`)
        }
        return loaded
      } catch (error) {
        if (!ParseError.isInstance(error)) throw error
        broken.push({ step, path, error })
      }
    }
    if (broken.length === 0) return undefined
    // The failed loads may have written into the model and optimizer: the caller must not train on (and does not).
    throw new ResumeError({
      reason: 'no-readable-checkpoint',
      directory: runDirectory,
      message:
        `cannot resume: none of the ${broken.length} checkpoint(s) in ${runDirectory} can be read ` +
        `(${broken.map(({ step, error }) => `checkpoint-${step}: ${error.message}`).join('; ')}); nothing was trained or overwritten`,
      cause: broken[0]!.error,
    })
  }
  /** A separate critic's checkpoint of `step` (`critic/checkpoint-<step>`): missing or unreadable is a `ResumeError`. */
  const loadCritic = async (runDirectory: string, step: number, target: NonNullable<RunStateOptions['critic']>) => {
    const saved = join(runDirectory, 'critic', `checkpoint-${step}`)
    try {
      await loadTrainingCheckpoint(saved, target)
    } catch (error) {
      const missing = (error as { code?: unknown }).code === 'ENOENT' || (error as { cause?: { code?: unknown } }).cause?.code === 'ENOENT'
      if (!missing && !LudicError.isInstance(error)) throw error
      throw new ResumeError({
        reason: missing ? 'critic-missing' : 'critic-unreadable',
        directory: runDirectory,
        message: `cannot resume: the critic of checkpoint-${step} (${saved}) ${missing ? 'is missing' : `cannot be read (${(error as Error).message})`}`,
        cause: error,
      })
    }
  }
  /**
   * The KL reference's weights, saved once under `reference/` (or, when it moves, beside each checkpoint as
   * `reference/checkpoint-<step>`): missing or unreadable is a `ResumeError`.
   */
  const loadReference = async (runDirectory: string, model: CausalLanguageModel, step: number) => {
    const folder = join(runDirectory, 'reference')
    const saved = referenceMoves ? (await listCheckpoints(folder)).find((checkpoint) => checkpoint.step === step)?.path : await latestCheckpoint(folder)
    if (saved === undefined) {
      throw new ResumeError({
        reason: 'reference-missing',
        directory: runDirectory,
        message: referenceMoves
          ? `cannot resume: ${join(folder, `checkpoint-${step}`)} is missing, and the KL term's reference at that step (it moves: kl.referenceSync) ` +
            'cannot be rebuilt from the checkpoint; restore it, or start a new run'
          : `cannot resume: ${folder} is missing, and the KL term's reference (the weights the run started from) cannot be rebuilt from a ` +
            'checkpoint; restore it, or start a new run (a run without the kl term needs none)',
      })
    }
    try {
      await loadTrainingCheckpoint(saved, { parameters: model.parameters() })
    } catch (error) {
      if (!LudicError.isInstance(error)) throw error
      throw new ResumeError({
        reason: 'reference-unreadable',
        directory: runDirectory,
        message: `cannot resume: the KL term's reference in ${saved} cannot be read (${(error as Error).message})`,
        cause: error,
      })
    }
  }
  return {
    directory,
    log: (metrics) => loggers.log(metrics),
    text: (tag, step, text) => loggers.text(tag, step, text),
    closeLoggers: () => loggers.close(),
    async logTrajectories(step, lines) {
      await trajectoryFile.write(step, lines)
    },
    async resume() {
      const runDirectory = directory
      const loaded = await loadNewest(runDirectory)
      if (loaded === undefined) return undefined
      const extra = (loaded.extra ?? {}) as { estimatorState?: unknown; history?: StepMetrics[]; trainerState?: JsonValue }
      if (reference !== undefined) await loadReference(runDirectory, reference, loaded.step)
      if (critic !== undefined) await loadCritic(runDirectory, loaded.step, critic)
      if (extra.estimatorState !== undefined && extra.estimatorState !== null && estimator?.setState !== undefined) {
        try {
          estimator.setState(extra.estimatorState)
        } catch (error) {
          if (!LudicError.isInstance(error)) throw error
          throw new ResumeError({
            reason: 'estimator-state',
            directory: runDirectory,
            message:
              `cannot resume: the state of the advantage estimator '${estimator.name}' in checkpoint-${loaded.step} does not fit config.advantage ` +
              `(${(error as Error).message}); resume with the estimator and options the run was trained with, or start a new run`,
            cause: error,
          })
        }
      }
      const history = extra.history ?? []
      // The loggers continue from the checkpoint's step (metrics.jsonl keeps its lines up to it, rebuilt when some are missing).
      await loggers.start({ step: loaded.step, history })
      // The episodes of steps after the checkpoint are played again: their old lines go.
      await trajectoryFile.keepThrough(loaded.step)
      return { step: loaded.step, random: loaded.random, history, ...(extra.trainerState === undefined ? {} : { trainerState: extra.trainerState }) }
    },
    async checkpoint({ step, random, history, trainerState }) {
      const runDirectory = directory
      if (reference !== undefined && referenceMoves) {
        // A moving reference is saved at every checkpoint, before it (like the critic's).
        await saveTrainingCheckpoint(
          join(runDirectory, 'reference'),
          { parameters: reference.parameters(), randomState: random.getState(), step },
          { keepLast: keepLast + 1 },
        )
      } else if (reference !== undefined && (await latestCheckpoint(join(runDirectory, 'reference'))) === undefined) {
        await saveTrainingCheckpoint(join(runDirectory, 'reference'), { parameters: reference.parameters(), randomState: random.getState(), step: 0 })
      }
      const extra = {
        estimatorState: (estimator?.getState?.() ?? null) as never,
        history: history as never,
        ...(trainerState === undefined ? {} : { trainerState }),
      }
      // The critic's first: a checkpoint of the run exists only once its critic's does.
      if (critic !== undefined)
        await saveTrainingCheckpoint(join(runDirectory, 'critic'), { ...critic, randomState: random.getState(), step }, { keepLast: keepLast + 1 })
      await saveTrainingCheckpoint(runDirectory, { parameters: weights(), optimizer, randomState: random.getState(), step, extra }, { keepLast })
      return join(runDirectory, `checkpoint-${step}`)
    },
    async prepare() {
      await mkdir(directory, { recursive: true })
    },
  }
}

/**
 * `refuseAnotherRun`'s check of the directory's files. A fresh run (one that does not resume) must not write into a directory that holds another run's checkpoints or KL
 * reference: it would mix with them (its checkpoints pruned against the other's, the other's reference taken for its
 * own, the other's metrics cut away). An `InvalidArgumentError` on `config.runDirectory`, before anything is made.
 */
export function refuseRunDirectoryOfAnother(directory: string): void {
  let names: string[]
  try {
    names = readdirSync(directory)
  } catch {
    return // no directory yet: nothing to mix with
  }
  const held = names.filter((name) => /^checkpoint-\d+$/.test(name) || name === 'reference').sort()
  if (held.length === 0) return
  throw new InvalidArgumentError({
    argument: 'config.runDirectory',
    value: directory,
    message:
      `holds another run (${held.slice(0, 3).join(', ')}${held.length > 3 ? ', …' : ''}): continue it with config.resume ` +
      '(ludic train --resume), or give another run directory; nothing was written',
  })
}
