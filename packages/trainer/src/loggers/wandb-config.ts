import { z } from 'zod'

/** The fields of `{ kind: 'wandb', … }` in `loggers`. */
export const wandbLoggerConfigSchema = z.strictObject({
  /** The W&B project. Default: `WANDB_PROJECT`, else `ludic`. */
  project: z.string().min(1).optional(),
  /** The W&B entity (user or team). Default: `WANDB_ENTITY`, else the API key's default entity. */
  entity: z.string().min(1).optional(),
  /** The run's display name. Default: the run directory's folder name. */
  name: z.string().min(1).optional(),
  /**
   * `online`: through W&B's JavaScript SDK (`@wandb/sdk`, installed beside Ludic) to `WANDB_BASE_URL` (default
   * https://api.wandb.ai) with `WANDB_API_KEY`. `offline`: W&B's run files written under the run directory
   * (`wandb/offline-run-<time>-<id>/files/`), nothing sent. Default: `WANDB_MODE` when it is `online` or `offline`, else
   * `online` when `WANDB_API_KEY` is set, else `offline`.
   */
  mode: z.enum(['online', 'offline']).optional(),
  /** Where offline runs go: relative to the run directory, or absolute. Default `wandb`. */
  directory: z.string().min(1).optional(),
})
export type WandbLoggerConfig = z.input<typeof wandbLoggerConfigSchema>

/** What the W&B logger reads of the environment (`process.env`): W&B's own variables. */
export type WandbEnvironment = Readonly<Record<string, string | undefined>>
