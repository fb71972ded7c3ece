import { z } from 'zod'

/** AdamW and gradient clipping settings of a trainer (the AdamW fields are `createAdamW`'s). */
export const optimizerConfigSchema = z.strictObject({
  /** Base learning rate, multiplied by the schedule. Default 1e-4. */
  learningRate: z.number().positive().finite().default(1e-4),
  beta1: z.number().min(0).lt(1).default(0.9),
  beta2: z.number().min(0).lt(1).default(0.999),
  epsilon: z.number().positive().finite().default(1e-8),
  /** Decoupled weight decay. Default 0. */
  weightDecay: z.number().min(0).finite().default(0),
  /**
   * TensorFlow's fused Adam on the native backend (`createAdamW`'s `fused`: the same update with float32 rates);
   * `false` for the composed ops (torch's update to a few ulp), `true` to require it. Default: where the backend has it.
   */
  fused: z.boolean().optional(),
  /** Gradients are scaled to this global L2 norm at most (torch `clip_grad_norm_`). Default 1. */
  maxGradNorm: z.number().positive().default(1),
})
export type OptimizerConfig = z.input<typeof optimizerConfigSchema>
