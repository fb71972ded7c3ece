/** The first stage of the pipeline: rewrites text before it is split (Unicode forms, case, spaces…). */
export interface Normalizer {
  normalize(text: string): string
}
