import { rename, rm, writeFile } from 'node:fs/promises'

/** Writes JSON (2-space indent, trailing newline) atomically: a temporary file renamed over `path`. */
export async function writeJsonFile(path: string, value: unknown): Promise<void> {
  const temporary = `${path}.${process.pid}.${Date.now()}.tmp`
  try {
    await writeFile(temporary, `${JSON.stringify(value, null, 2)}\n`)
    await rename(temporary, path)
  } catch (error) {
    await rm(temporary, { force: true })
    throw error
  }
}
