const SANE_REQUEST_ID = /^[\x21-\x7e]{1,128}$/

// The client's own X-Request-Id when it is sane (visible ASCII, at most 128), else a new one.
export function chooseRequestId(
  sent: string | null,
  generate: () => string = () => crypto.randomUUID(),
): string {
  return sent !== null && SANE_REQUEST_ID.test(sent) ? sent : generate()
}
