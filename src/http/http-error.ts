// An error that already knows its HTTP answer. Everything else becomes a 500 (or 503).
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
    this.name = 'HttpError'
  }
}

export function errorResponse(
  status: number,
  message: string,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify({ error: status, message }), {
    status,
    headers: { ...headers, 'content-type': 'application/json' },
  })
}
