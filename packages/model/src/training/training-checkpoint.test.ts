import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRandom, InvalidArgumentError, ParseError } from '@ludic/core'
import { initTensors, readSafetensorsFile, writeSafetensorsFile } from '@ludic/tensors'
import { latestCheckpoint, listCheckpoints } from './list-checkpoints.js'
import { loadTrainingCheckpoint } from './load-training-checkpoint.js'
import { saveTrainingCheckpoint } from './save-training-checkpoint.js'
import { createMlpOptimizer, createMlpParameters, mlpTotalSteps, snapshotOf, startMlpRun, trainMlp } from '../test/mlp-training.js'

let root: string
beforeAll(async () => {
  await initTensors({ backend: 'wasm', verbose: false })
  root = await mkdtemp(join(tmpdir(), 'ludic-training-checkpoint-'))
})
afterAll(async () => {
  await rm(root, { recursive: true, force: true, maxRetries: 5 })
})

describe('a run interrupted and resumed from its checkpoint', () => {
  it('continues bit for bit as if never stopped (two-layer MLP: data order, dropout, clipping, schedule, AdamW)', async () => {
    const runDirectory = join(root, 'resume')
    // Uninterrupted.
    const straight = startMlpRun(1, 2024)
    const straightLosses = trainMlp(straight.parameters, straight.optimizer, straight.random, 0, mlpTotalSteps)
    const expected = await snapshotOf(straight.parameters, straight.optimizer)
    const expectedRandom = straight.random.nextUint32()
    straight.dispose()

    // Interrupted after 5 steps: save, throw everything away.
    const first = startMlpRun(1, 2024)
    const firstLosses = trainMlp(first.parameters, first.optimizer, first.random, 0, 5)
    await saveTrainingCheckpoint(runDirectory, {
      parameters: first.parameters,
      optimizer: first.optimizer,
      randomState: first.random.getState(),
      step: 5,
      extra: { losses: firstLosses },
    })
    first.dispose()

    // Resumed in a "new process": different initial weights and generator, all overwritten by the checkpoint.
    const tensorsBefore = tf.memory().numTensors
    const resumed = startMlpRun(77, 5)
    const path = await latestCheckpoint(runDirectory)
    expect(path).toBe(join(runDirectory, 'checkpoint-5'))
    const loaded = await loadTrainingCheckpoint(path!, { parameters: resumed.parameters, optimizer: resumed.optimizer })
    expect(loaded.step).toBe(5)
    expect(loaded.optimizerStep).toBe(5)
    expect(loaded.extra).toEqual({ losses: firstLosses })
    expect(resumed.optimizer.stepCount).toBe(5)
    const resumedLosses = trainMlp(resumed.parameters, resumed.optimizer, loaded.random, loaded.step, mlpTotalSteps)

    expect([...firstLosses, ...resumedLosses]).toEqual(straightLosses)
    const actual = await snapshotOf(resumed.parameters, resumed.optimizer)
    expect([...actual.keys()]).toEqual([...expected.keys()])
    for (const [name, bytes] of expected) expect(Buffer.compare(actual.get(name)!, bytes), `${name} bit for bit`).toBe(0)
    expect(loaded.random.nextUint32()).toBe(expectedRandom)
    resumed.dispose()
    expect(tf.memory().numTensors).toBe(tensorsBefore)
  })
})

describe('saveTrainingCheckpoint / loadTrainingCheckpoint', () => {
  it('writes model.safetensors with the parameter names, optimizer.safetensors with torch state keys, and training-state.json', async () => {
    const run = startMlpRun(3, 4)
    trainMlp(run.parameters, run.optimizer, run.random, 0, 2)
    const { path } = await saveTrainingCheckpoint(join(root, 'layout'), {
      parameters: run.parameters,
      optimizer: run.optimizer,
      randomState: run.random.getState(),
      step: 2,
    })
    expect((await readdir(path)).sort()).toEqual(['model.safetensors', 'optimizer.safetensors', 'training-state.json'])
    const weights = await readSafetensorsFile(join(path, 'model.safetensors'))
    expect([...weights.tensors.keys()].sort()).toEqual([...run.parameters.keys()].sort())
    expect(weights.tensors.get('model.layers.0.weight')!.data).toEqual(run.parameters.get('model.layers.0.weight')!.dataSync())
    const optimizer = await readSafetensorsFile(join(path, 'optimizer.safetensors'))
    expect(optimizer.metadata).toEqual({ step: '2' })
    expect(optimizer.tensors.has('model.layers.1.bias.exp_avg_sq')).toBe(true)
    const state = JSON.parse(await readFile(join(path, 'training-state.json'), 'utf8'))
    expect(state).toMatchObject({ format: 'ludic-training-checkpoint', version: 1, step: 2, randomState: [...run.random.getState()], extra: {} })
    expect(state.optimizer).toMatchObject({
      name: 'adamw',
      step: 2,
      hyperparameters: { learningRate: 0.05, excludeFromWeightDecay: ['**.bias', '**norm.weight'] },
    })
    run.dispose()
  })

  it('keeps the last N checkpoints, replaces one of the same step, and lists only complete ones', async () => {
    const runDirectory = join(root, 'keep')
    const run = startMlpRun(3, 4)
    for (const step of [1, 2, 3, 4]) {
      await saveTrainingCheckpoint(runDirectory, { parameters: run.parameters, randomState: run.random.getState(), step, extra: { step } }, { keepLast: 2 })
    }
    expect((await listCheckpoints(runDirectory)).map((entry) => entry.step)).toEqual([3, 4])
    await saveTrainingCheckpoint(runDirectory, { parameters: run.parameters, randomState: run.random.getState(), step: 4, extra: { again: true } })
    const loaded = await loadTrainingCheckpoint((await latestCheckpoint(runDirectory))!, { parameters: run.parameters })
    expect(loaded.extra).toEqual({ again: true })
    expect(loaded.optimizerStep).toBeNull()
    // Hand-made look-alikes are not checkpoints: no state file, a hidden temporary directory, another name.
    await mkdir(join(runDirectory, 'checkpoint-9'))
    await mkdir(join(runDirectory, '.checkpoint-10.123.abcdef.tmp'))
    await writeFile(join(runDirectory, '.checkpoint-10.123.abcdef.tmp', 'training-state.json'), '{}')
    await mkdir(join(runDirectory, 'checkpoint-x'))
    expect(await latestCheckpoint(runDirectory)).toBe(join(runDirectory, 'checkpoint-4'))
    expect(await latestCheckpoint(join(root, 'no-such-run'))).toBeUndefined()
    // The next save removes the crashed save's leftovers.
    await saveTrainingCheckpoint(runDirectory, { parameters: run.parameters, randomState: run.random.getState(), step: 5 })
    expect((await readdir(runDirectory)).sort()).toEqual(['checkpoint-3', 'checkpoint-4', 'checkpoint-5', 'checkpoint-9', 'checkpoint-x'])
    run.dispose()
  })

  it('checks everything before changing anything: missing, misshaped and unexpected tensors are ParseErrors naming them', async () => {
    const runDirectory = join(root, 'validation')
    const run = startMlpRun(3, 4)
    trainMlp(run.parameters, run.optimizer, run.random, 0, 1)
    const { path } = await saveTrainingCheckpoint(runDirectory, {
      parameters: run.parameters,
      optimizer: run.optimizer,
      randomState: run.random.getState(),
      step: 1,
    })
    const target = createMlpParameters(8)
    const targetBefore = new Map([...target].map(([name, parameter]) => [name, parameter.dataSync().slice()]))
    const targetOptimizer = createMlpOptimizer(target)
    const expectUnchanged = () => {
      for (const [name, parameter] of target) expect(parameter.dataSync()).toEqual(targetBefore.get(name))
      expect(targetOptimizer.stepCount).toBe(0)
    }

    // A model with an extra parameter and a misshaped one.
    const other = new Map(target)
    other.set('model.layers.2.weight', tf.variable(tf.zeros([2, 2])))
    other.set('model.layers.1.bias', tf.variable(tf.zeros([5])))
    const error = await loadTrainingCheckpoint(path, { parameters: other }).catch((caught: unknown) => caught)
    expect(ParseError.isInstance(error)).toBe(true)
    expect((error as ParseError).message).toMatch(
      /model\.safetensors.*missing tensors model\.layers\.2\.weight; misshaped tensors model\.layers\.1\.bias \(shape \[4\], expected \[5\]\)/,
    )
    expect((error as ParseError).path).toEqual(['model.layers.2.weight'])
    tf.dispose([other.get('model.layers.2.weight')!, other.get('model.layers.1.bias')!])

    // A smaller model: the checkpoint has tensors it lacks.
    const smaller = new Map([...target].filter(([name]) => name !== 'model.norm.weight'))
    await expect(loadTrainingCheckpoint(path, { parameters: smaller })).rejects.toThrow(/unexpected tensors model\.norm\.weight/)

    // A corrupted optimizer file: a moment removed.
    const optimizerFile = await readSafetensorsFile(join(path, 'optimizer.safetensors'))
    optimizerFile.tensors.delete('model.layers.0.weight.exp_avg')
    await writeSafetensorsFile(join(path, 'optimizer.safetensors'), optimizerFile.tensors, { metadata: optimizerFile.metadata })
    await expect(loadTrainingCheckpoint(path, { parameters: target, optimizer: targetOptimizer })).rejects.toThrow(
      /optimizer\.safetensors.*missing tensors model\.layers\.0\.weight\.exp_avg/,
    )
    // …is no problem when only the weights are wanted.
    await loadTrainingCheckpoint(path, { parameters: createMlpParameters(9) }).then(() => undefined)

    // A broken state file.
    const statePath = join(path, 'training-state.json')
    const state = JSON.parse(await readFile(statePath, 'utf8'))
    await writeFile(statePath, JSON.stringify({ ...state, randomState: [1, 2, 3] }))
    await expect(loadTrainingCheckpoint(path, { parameters: target })).rejects.toThrow(/training-state\.json at randomState/)
    await writeFile(statePath, JSON.stringify({ ...state, randomState: [0, 0, 0, 0] }))
    await expect(loadTrainingCheckpoint(path, { parameters: target })).rejects.toThrow(/randomState: is not a generator state/)
    await writeFile(statePath, '{"format": ')
    await expect(loadTrainingCheckpoint(path, { parameters: target })).rejects.toThrow(ParseError)
    await rm(statePath)
    await expect(loadTrainingCheckpoint(path, { parameters: target })).rejects.toThrow(/training-state\.json: cannot be read \(ENOENT\)/)
    await expect(loadTrainingCheckpoint(join(root, 'nothing-here'), { parameters: target })).rejects.toThrow(ParseError)
    expectUnchanged()
    targetOptimizer.dispose()
    tf.dispose([...target.values()])
    run.dispose()
  })

  it('names bad arguments', async () => {
    const parameters = createMlpParameters(1)
    const randomState = createRandom(1).getState()
    const save = (contents: object, options?: object) => saveTrainingCheckpoint(join(root, 'bad'), contents as never, options as never)
    await expect(save({ parameters, randomState, step: -1 })).rejects.toThrow(/'contents\.step' \(value: -1\)/)
    await expect(save({ parameters, randomState: [1, 2, 3, 4], step: 1 })).rejects.toThrow(/'contents\.randomState'/)
    await expect(save({ parameters, randomState: new Uint32Array(4), step: 1 })).rejects.toThrow(/'contents\.randomState'.*not a generator state/)
    await expect(save({ parameters, randomState, step: 1, extra: { f: () => 1 } })).rejects.toThrow(/'contents\.extra/)
    await expect(save({ parameters, randomState, step: 1 }, { keepLast: 0 })).rejects.toThrow(/'options\.keepLast' \(value: 0\)/)
    await expect(save({ parameters: new Map([['ids', tf.tensor([1], [1], 'int32')]]), randomState, step: 1 })).rejects.toThrow(InvalidArgumentError)
    await expect(loadTrainingCheckpoint(join(root, 'x'), { parameters: { a: 1 } } as never)).rejects.toThrow(/'targets\.parameters'/)
    tf.dispose([...parameters.values()])
  })
})
