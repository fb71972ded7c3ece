/**
 * A response body grew past its limit (`limitResponseBody`). Internal to a reader: the remote policy and
 * `loadTokenizerFromUrl` report it as a `ParseError` naming the limit.
 */
export class ResponseTooLarge extends Error {
  override readonly name = 'ResponseTooLarge'
  constructor(readonly limit: number) {
    super(`The response is larger than its limit (${limit} bytes)`)
  }
}

/**
 * The same response with a body that errors with `ResponseTooLarge` as soon as more than `maxBytes` have
 * arrived (at once when its content-length says so), cancelling the rest: a 400 MB answer is never read whole.
 */
export function limitResponseBody(response: Response, maxBytes: number): Response {
  if (response.body === null) return response
  const declared = Number(response.headers.get('content-length') ?? Number.NaN)
  let received = 0
  const counter = new TransformStream<Uint8Array, Uint8Array>({
    start(controller) {
      if (Number.isFinite(declared) && declared > maxBytes) controller.error(new ResponseTooLarge(maxBytes))
    },
    transform(chunk, controller) {
      received += chunk.byteLength
      if (received > maxBytes) controller.error(new ResponseTooLarge(maxBytes))
      else controller.enqueue(chunk)
    },
  })
  const body = response.body.pipeThrough(counter)
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers })
}
