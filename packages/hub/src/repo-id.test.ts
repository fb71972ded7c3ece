import { mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { isRepoId, isValidRevision, parseRepoReference, repoFilePathProblem } from './repo-id.js'

describe('repository ids', () => {
  it('accepts owner/name as the Hub does, with an optional @revision', () => {
    for (const id of ['Qwen/Qwen3-0.6B', 'meta-llama/Llama-3.2-1B-Instruct', 'a/b', 'user_1/model.v2', 'HuggingFaceTB/SmolLM2-135M']) {
      expect(parseRepoReference(id), id).toEqual({ repoId: id })
    }
    expect(parseRepoReference('Qwen/Qwen3-0.6B@main')).toEqual({ repoId: 'Qwen/Qwen3-0.6B', revision: 'main' })
    expect(parseRepoReference('Qwen/Qwen3-0.6B@refs/pr/12')).toEqual({ repoId: 'Qwen/Qwen3-0.6B', revision: 'refs/pr/12' })
    expect(parseRepoReference('a/b@0123456789abcdef0123456789abcdef01234567')).toEqual({ repoId: 'a/b', revision: '0123456789abcdef0123456789abcdef01234567' })
  })

  it("refuses what the Hub refuses: no owner, extra segments, '--', '..', .git, edges that are not letters or digits, over 96 characters, bad revisions", () => {
    for (const text of [
      'gpt2',
      'a/b/c',
      '/a/b',
      './a/b',
      'a/b/',
      'a--b/c',
      'a/b..c',
      'a/b.git',
      '-a/b',
      'a/b-',
      'a/.b',
      'a b/c',
      'a/b@',
      'a/b@../x',
      'a/b@x//y',
      `a/${'b'.repeat(95)}`,
      'C:\\models\\x',
    ]) {
      expect(parseRepoReference(text), text).toBeUndefined()
    }
    expect(isValidRevision('x'.repeat(257))).toBe(false)
    expect(isValidRevision('main\n')).toBe(false)
  })

  it('isRepoId is false for an existing local path of the same shape, which wins over the Hub', async () => {
    // A folder `<owner>/<name>` relative to the working directory, removed right after.
    const owner = `ludic-repo-id-test-${process.pid}`
    await mkdir(join(owner, 'model'), { recursive: true })
    try {
      expect(isRepoId(`${owner}/model`)).toBe(false)
      expect(isRepoId(`${owner}/other-model`)).toBe(true)
      expect(isRepoId(`${owner}/other-model@v1`)).toBe(true)
      expect(isRepoId('./x/y')).toBe(false)
    } finally {
      await rm(owner, { recursive: true, force: true, maxRetries: 5 })
    }
  })
})

describe('repository file paths', () => {
  it('accepts relative paths and refuses anything that could leave the snapshot folder', () => {
    expect(repoFilePathProblem('model-00001-of-00002.safetensors')).toBeUndefined()
    expect(repoFilePathProblem('onnx/model.onnx')).toBeUndefined()
    expect(repoFilePathProblem('')).toBe('is empty')
    expect(repoFilePathProblem('/etc/passwd')).toBe('is absolute')
    expect(repoFilePathProblem('../x')).toBe("has an empty, '.' or '..' segment")
    expect(repoFilePathProblem('a/../../x')).toBe("has an empty, '.' or '..' segment")
    expect(repoFilePathProblem('a//x')).toBe("has an empty, '.' or '..' segment")
    expect(repoFilePathProblem('a\\..\\x')).toBe('holds a backslash or a control character')
    expect(repoFilePathProblem('a\u0000b')).toBe('holds a backslash or a control character')
    expect(repoFilePathProblem('x'.repeat(1025))).toBe('is longer than 1024 characters')
  })
})
