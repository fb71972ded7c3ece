#!/usr/bin/env node
// The `ludic` command: starts the built CLI in dist/. This launcher is a plain file so that `npm install` links
// `ludic` into node_modules/.bin even before a first build (npm links no bin whose file is missing).
import { existsSync } from 'node:fs'

const entry = new URL('../dist/bin.js', import.meta.url)
if (!existsSync(entry)) {
  process.stderr.write('ludic: @ludic/cli is not built (dist/bin.js is missing). In a clone of the repository, run `npm run build` first.\n')
  process.exit(1)
}
await import(entry.href)
