const marker = Symbol.for('ludic.ResponseTooLarge')

/** A response body grew past its limit (`limitResponseBody`); a reader reports it in its own terms (`isResponseTooLarge`). */
class ResponseTooLarge extends Error {
  override readonly name = 'ResponseTooLarge'
  readonly [marker] = true
  constructor(
    readonly limit: number,
    limitName: string,
  ) {
    super(`The answer is larger than ${limitName} (${limit} bytes)`)
  }
}

/** Whether `error` is `limitResponseBody`'s: the body grew past `limit` bytes (works across copies of this package). */
export function isResponseTooLarge(error: unknown): error is Error & { readonly limit: number } {
  return typeof error === 'object' && error !== null && (error as { [marker]?: unknown })[marker] === true
}

/**
 * The same response with a body that errors (`isResponseTooLarge`) as soon as more than `maxBytes` have arrived (at
 * once when its content-length says so), cancelling the rest: a 400 MB answer is never read whole. `limitName` names
 * the limit in the error's message (the option a user would raise).
 */
export function limitResponseBody(response: Response, maxBytes: number, limitName = 'maxBytes'): Response {
  if (response.body === null) return response
  const declared = Number(response.headers.get('content-length') ?? Number.NaN)
  let received = 0
  const counter = new TransformStream<Uint8Array, Uint8Array>({
    start(controller) {
      if (Number.isFinite(declared) && declared > maxBytes) controller.error(new ResponseTooLarge(maxBytes, limitName))
    },
    transform(chunk, controller) {
      received += chunk.byteLength
      if (received > maxBytes) controller.error(new ResponseTooLarge(maxBytes, limitName))
      else controller.enqueue(chunk)
    },
  })
  const body = response.body.pipeThrough(counter)
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers })
}
