/** Messages between the page (`main.ts`) and the training worker (`worker.ts`). Plain data only. */
import type { GameName, RecipeOptions } from './recipes.js'
import type { Evaluation, GameState, MoveChoice, StepReport } from './session.js'

export type BackendChoice = 'auto' | 'webgpu' | 'webgl' | 'wasm' | 'cpu'

/** The page asks; each request carries an id its answer repeats. */
export type Request =
  | { kind: 'start'; recipe: RecipeOptions; backend: BackendChoice }
  | { kind: 'pause' }
  | { kind: 'resume' }
  | { kind: 'reset' }
  | { kind: 'evaluate' }
  | { kind: 'newGame'; humanRole: 'player0' | 'player1' }
  | { kind: 'play'; action: string }
  | { kind: 'probabilities'; prompt: string; actions: string[] }
  | { kind: 'prefer'; prompt: string; chosen: string; rejected: string }
  | { kind: 'trainPreferences'; steps: number }
  | { kind: 'files' }
  | { kind: 'load'; files: Record<string, string | Uint8Array>; backend: BackendChoice; game: GameName; asyncReadsOnly?: boolean }
  | { kind: 'logits'; prompt: string }
  | { kind: 'probe'; examples: { prompt: string; response: string }[] }

export type Phase = 'idle' | 'warming-up' | 'training' | 'paused' | 'done' | 'error'

/** What the worker tells the page unasked: progress, and the answers to requests. */
export type Event =
  | {
      kind: 'status'
      phase: Phase
      backend?: string
      synchronousReads?: boolean | undefined
      step: number
      steps: number
      warmUpStep?: number
      warmUpSteps?: number
      message?: string
    }
  | { kind: 'warmUp'; step: number; loss: number }
  | { kind: 'step'; report: StepReport }
  | { kind: 'evaluation'; evaluation: Evaluation; warmedUp: boolean }
  | { kind: 'answer'; id: number; value: AnswerValue }
  | { kind: 'failure'; id: number; message: string; name: string }

export type AnswerValue =
  | GameState
  | MoveChoice
  | Evaluation
  | Record<string, string | Uint8Array>
  | { logits: number[] }
  | { loss: number; logits: number[]; backend: string }
  | { preferences: number }
  | { metrics: Record<string, number>[] }
  | { ok: true }

export interface Envelope {
  id: number
  request: Request
}
