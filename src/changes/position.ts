const MAX_POSITION = 2n ** 63n - 1n

export const POSITION_RULE = 'must be a decimal integer from 0 to 9223372036854775807'

// A position as a client writes it: decimal digits, leading zeros allowed; undefined when it is not
// one, or out of range.
export function parsePosition(text: string): bigint | undefined {
  if (!/^[0-9]+$/.test(text)) return undefined
  const digits = text.replace(/^0+(?=.)/, '')
  if (digits.length > 19) return undefined
  const position = BigInt(digits)
  return position <= MAX_POSITION ? position : undefined
}
