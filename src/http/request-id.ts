const SANE_REQUEST_ID = /^[\x21-\x7e]{1,128}$/

// The client's own X-Request-Id when it is sane (visible ASCII, at most 128), else a new one.
export function chooseRequestId(
  sent: string | null,
  generate: () => string = () => crypto.randomUUID(),
): string {
  return sent !== null && SANE_REQUEST_ID.test(sent) ? sent : generate()
}

export type RequestIds = ReturnType<typeof requestIds>

// The id chosen for each request in flight, for the hooks and handlers that need it.
export function requestIds(generate?: () => string) {
  const ids = new WeakMap<Request, string>()
  return {
    assign: (request: Request): string => {
      const id = chooseRequestId(request.headers.get('x-request-id'), generate)
      ids.set(request, id)
      return id
    },
    of: (request: Request): string => ids.get(request) ?? '',
  }
}
