import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { readSafetensorsFile, type SafetensorsTensor } from '@ludic/tensors'

/** The fixture directory (tiny transformers checkpoints made by scripts/make-reference-models.py). */
export const fixturesDirectory = fileURLToPath(new URL('./fixtures', import.meta.url))

export interface ReferenceIndex {
  transformers: string
  torch: string
  variants: Record<string, { model_type: string; dtype: string; parameters: number; new_tokens: number; peft?: string }>
}

export const referenceIndex = JSON.parse(readFileSync(join(fixturesDirectory, 'references.json'), 'utf8')) as ReferenceIndex
/** The model checkpoints (the PEFT adapter fixture `qwen2-lora` is not one). */
export const variantNames = Object.keys(referenceIndex.variants).filter((name) => referenceIndex.variants[name]!.peft === undefined)

export interface Matrix<T> {
  data: T
  shape: number[]
}

/** The reference tensors of one variant. */
export interface VariantReferences {
  directory: string
  single: { inputIds: Int32Array[]; logits: Matrix<Float32Array> }
  batch: { inputIds: Int32Array[]; attentionMask: Int32Array[]; positionIds: Int32Array[]; logits: Matrix<Float32Array> }
  greedy: Int32Array[]
}

function rows(tensor: SafetensorsTensor | undefined, name: string): Int32Array[] {
  if (tensor === undefined || tensor.dtype !== 'I32') throw new Error(`reference ${name} missing or not I32`)
  const [count, width] = tensor.shape as [number, number]
  return Array.from({ length: count }, (_, row) => tensor.data.slice(row * width, (row + 1) * width))
}

function floats(tensor: SafetensorsTensor | undefined, name: string): Matrix<Float32Array> {
  if (tensor === undefined || tensor.dtype !== 'F32') throw new Error(`reference ${name} missing or not F32`)
  return { data: tensor.data, shape: tensor.shape }
}

export async function loadReferences(variant: string): Promise<VariantReferences> {
  const directory = join(fixturesDirectory, variant)
  const { tensors } = await readSafetensorsFile(join(directory, 'references.safetensors'))
  return {
    directory,
    single: { inputIds: rows(tensors.get('single.input_ids'), 'single.input_ids'), logits: floats(tensors.get('single.logits'), 'single.logits') },
    batch: {
      inputIds: rows(tensors.get('batch.input_ids'), 'batch.input_ids'),
      attentionMask: rows(tensors.get('batch.attention_mask'), 'batch.attention_mask'),
      positionIds: rows(tensors.get('batch.position_ids'), 'batch.position_ids'),
      logits: floats(tensors.get('batch.logits'), 'batch.logits'),
    },
    greedy: rows(tensors.get('greedy.sequences'), 'greedy.sequences'),
  }
}

/**
 * max |actual − expected| / max |expected| over the positions where `mask` (one flag per `[batch, time]`
 * position, all when undefined) is set.
 */
export function relativeError(actual: Float32Array, expected: Float32Array, vocab: number, mask?: Int32Array[]): number {
  let largestDifference = 0
  let largestValue = 0
  const time = mask?.[0]?.length
  for (let position = 0; position * vocab < expected.length; position++) {
    if (mask !== undefined && time !== undefined && mask[Math.floor(position / time)]![position % time] === 0) continue
    for (let index = position * vocab; index < (position + 1) * vocab; index++) {
      largestDifference = Math.max(largestDifference, Math.abs(actual[index]! - expected[index]!))
      largestValue = Math.max(largestValue, Math.abs(expected[index]!))
    }
  }
  return largestDifference / largestValue
}
