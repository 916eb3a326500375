// JSON.parse rounds integers beyond 2^53. The reviver's `context.source` (Bun, Deno, Node 21+)
// gives the literal as written, so `id` values keep their exact value as bigint.

type ReviverContext = { source?: string }

export function parseJsonExact(text: string): unknown {
  return JSON.parse(text, function revive(key, value, context?: ReviverContext) {
    if (key !== 'id' || typeof value !== 'number' || context?.source === undefined) return value
    return exactInteger(context.source) ?? value
  })
}

const NUMBER_LITERAL = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/
// Beyond this many digits a value is far outside int64; stop before building huge bigints.
const MAX_DIGITS = 40

// The exact integer a JSON number literal denotes (`7.0` and `7e0` are 7), or undefined when it
// has a fractional part or is too large to be worth computing.
export function exactInteger(literal: string): bigint | undefined {
  const match = NUMBER_LITERAL.exec(literal)
  if (!match) return undefined
  const [, sign = '', whole = '', fraction = '', exponentText = '0'] = match
  const digits = (whole + fraction).replace(/^0+(?=\d)/, '')
  const scale = Number(exponentText) - fraction.length
  if (digits === '0') return 0n
  if (scale >= 0) {
    if (digits.length + scale > MAX_DIGITS) return undefined
    return BigInt(sign + digits) * 10n ** BigInt(scale)
  }
  const cut = digits.length + scale
  const dropped = cut > 0 ? digits.slice(cut) : digits
  if (!/^0*$/.test(dropped)) return undefined
  return cut > 0 ? BigInt(sign + digits.slice(0, cut)) : 0n
}
