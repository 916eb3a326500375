// The Error body (docs/api.md) as a response: every error the API answers looks like this.
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
