// Event data is read as text and parsed here because a JSON number beyond 2^53 (older event
// shapes stored ids that way) would be rounded by a plain JSON.parse. Such integers come back as
// bigint, and so does every integer `plantId` (the v0 id, a bigint whatever its size); everything
// else parses as usual.
type ReviverContext = { source?: string }

// A number of 16 digits or more, not a string of digits: the reviver is slow, so it runs only
// where it may matter (text that merely looks like this costs time, never exactness).
const LONG_NUMBER = /[[:,]\s*-?\d{16}/

export function parseEventData(text: string): unknown {
  if (!LONG_NUMBER.test(text) && !text.includes('"plantId"')) return JSON.parse(text)
  return JSON.parse(text, (key, value, context?: ReviverContext) => {
    if (typeof value !== 'number' || context?.source === undefined) return value
    if (Number.isSafeInteger(value) && key !== 'plantId') return value
    return /^-?\d+$/.test(context.source) ? BigInt(context.source) : value
  })
}
