// What a run config's `plugins: [src/nim-plugin.ts]` imports before it reads the rest of the file: registering the
// game here lets `environments: [{ game: nim-v0 }]` name it (see nim.yaml).
import { registerGame } from '@ludic/games'
import { createNim } from './game.js'

registerGame('nim-v0', createNim)
