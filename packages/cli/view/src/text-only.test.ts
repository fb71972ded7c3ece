import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

// The page shows model text (prompts, responses, tokens, the judge's text, boards) and file contents only as text:
// JSX children and attributes, which Preact escapes. The browser test checks that with a hostile run; this keeps
// the ways around it out of the source, where a review might miss one.
describe('the page never writes HTML from strings', () => {
  const folder = new URL('.', import.meta.url)
  const sources = readdirSync(folder).filter((name) => /\.tsx?$/.test(name) && !name.endsWith('.test.ts'))

  it.each(sources)('%s', (name) => {
    const text = readFileSync(new URL(name, folder), 'utf8')
    for (const sink of ['dangerouslySetInnerHTML', 'innerHTML', 'outerHTML', 'insertAdjacentHTML', 'document.write', 'DOMParser', 'createContextualFragment'])
      expect(text.includes(sink), `${name} uses ${sink}`).toBe(false)
  })

  it('looks at every page source', () => {
    expect(sources).toEqual(expect.arrayContaining(['app.tsx', 'episodes.tsx', 'tables.tsx', 'runs.tsx', 'metric-charts.tsx']))
  })
})
