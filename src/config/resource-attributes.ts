// OTEL_RESOURCE_ATTRIBUTES as OpenTelemetry's SDKs read it: `key=value` pairs separated by commas
// (the W3C Baggage form), spaces around each trimmed, values percent-decoded so that a comma or an
// equals sign can be written in one. Undefined when the text is not such a list.
export function parseResourceAttributes(text: string): Record<string, string> | undefined {
  const attributes: Record<string, string> = {}
  for (const pair of text.split(',')) {
    if (pair.trim() === '') continue
    const at = pair.indexOf('=')
    const key = pair.slice(0, at).trim()
    if (at === -1 || key === '') return undefined
    try {
      attributes[key] = decodeURIComponent(pair.slice(at + 1).trim())
    } catch {
      return undefined
    }
  }
  return attributes
}
