import { readFileSync } from 'node:fs'
import { type KeyEncryptionKeys, parseKeyEncryptionKeys } from '../crypto/key-encryption-keys.ts'
import { TARGET_SESSION_ATTRS, withTargetSessionAttrs } from '../database/target-session-attrs.ts'
import { parseResourceAttributes } from './resource-attributes.ts'

// The type and range of a setting's value, one rule per row of the table (settings.ts): what a
// value reads as, or why it is refused, in the words that follow the variable's name
// (`must be an integer from 1 to 1000, got "-3"`). A secret's refusal never quotes it.
export type Checked<T> = { value: T } | { refused: string }
export type Rule<T> = (value: string, name: string) => Checked<T>

const got = (value: string) => `, got ${JSON.stringify(value)}`
const accept = <T>(value: T): Checked<T> => ({ value })
const refuse = (text: string): Checked<never> => ({ refused: text })
// A character no one types in a setting on purpose: a paste that took a line break or an escape.
const CONTROL = /\p{Cc}/u

export function integer(min: number, max: number): Rule<number> {
  return (value) => {
    const number = Number(value)
    if (/^\d+$/.test(value) && number >= min && number <= max) return accept(number)
    return refuse(`must be an integer from ${min} to ${max}${got(value)}`)
  }
}

export function decimal(min: number, max: number): Rule<number> {
  return (value) => {
    const number = Number(value)
    if (/^\d+(\.\d+)?$/.test(value) && number >= min && number <= max) return accept(number)
    return refuse(`must be a number from ${min} to ${max}${got(value)}`)
  }
}

export function oneOf<const T extends string>(values: readonly T[], { anyCase = false } = {}): Rule<T> {
  return (value) => {
    const found = values.find((each) => (anyCase ? each === value.toLowerCase() : each === value))
    return found === undefined ? refuse(`must be one of ${values.join(', ')}${got(value)}`) : accept(found)
  }
}

export const text: Rule<string> = (value) =>
  CONTROL.test(value) ? refuse(`must be text without control characters${got(value)}`) : accept(value)

// An address to listen on: a name or an IPv4 or IPv6 address; whether this machine has it, only
// the listen can tell (start/serve.ts).
export const address: Rule<string> = (value) =>
  /^[\w.:%-]+$/.test(value)
    ? accept(value)
    : refuse(`must be an address or a host name (0.0.0.0 for all)${got(value)}`)

// A folder's path, or `memory:`; a value written as another URL is a mistake, not a folder's name.
export const folder: Rule<string> = (value) =>
  value === 'memory:' || !/^[a-z][\w+.-]*:/i.test(value)
    ? text(value, '')
    : refuse(`must be a folder's path or memory:${got(value)}`)

export function webUrl(value: string): Checked<string> {
  return /^https?:$/.test(URL.parse(value)?.protocol ?? '')
    ? accept(value)
    : refuse(`must be an http:// or https:// URL${got(value)}`)
}

// libpq's URL, in its multi-host form too (which `URL` cannot parse), with the
// target_session_attrs that libpq knows.
export const postgresUrl: Rule<string> = (value) => {
  if (!/^postgres(ql)?:\/\//.test(value)) return refuse('must be a postgres:// or postgresql:// URL')
  if (withTargetSessionAttrs(value) === undefined)
    return refuse(`must have a target_session_attrs of ${TARGET_SESSION_ATTRS.join(', ')}`)
  return accept(value)
}

// Replicas, one server each: a host, and at most a database name as the path.
export const postgresUrls: Rule<string[]> = (value) => {
  const urls = value.split(',').map((url) => url.trim())
  const oneServer = (each: string) => {
    const url = URL.parse(each)
    if (url === null || /\s/.test(each)) return false
    return /^postgres(ql)?:$/.test(url.protocol) && url.hostname !== '' && /^(\/[^/]*)?$/.test(url.pathname)
  }
  return urls.every(oneServer)
    ? accept(urls)
    : refuse('must be postgres:// or postgresql:// URLs with a host, comma-separated')
}

export const natsUrls: Rule<string[]> = (value) => {
  const urls = value.split(',').map((url) => url.trim())
  const nats = (each: string) => {
    const url = URL.parse(each)
    return url !== null && /^(nats|tls):$/.test(url.protocol) && url.hostname !== '' && url.port !== ''
  }
  return urls.every(nats)
    ? accept(urls)
    : refuse(`must be nats:// or tls:// URLs with host and port, comma-separated${got(value)}`)
}

// Origins as a browser sends them (`https://app.example.com:8443`: no path, no default port, in
// lower case), so that comparing is exact; anything else would never match.
export const origins: Rule<'*' | string[]> = (value) => {
  if (value === '*') return accept('*')
  const listed = value.split(',').map((origin) => origin.trim())
  for (const origin of listed) {
    const url = URL.parse(origin)
    const canonical = url && /^https?:$/.test(url.protocol) ? url.origin : undefined
    if (canonical === origin) continue
    const hint = canonical === undefined ? '' : ` (did you mean "${canonical}"?)`
    return refuse(
      `must be * or http(s) origins (scheme://host[:port], no path), comma-separated: "${origin}" is not one${hint}`,
    )
  }
  return accept(listed)
}

export const streamName: Rule<string> = (value) =>
  /^[^\s.*>/\\]+$/.test(value)
    ? accept(value)
    : refuse(`must be a stream name without spaces, ".", "*", ">" or slashes${got(value)}`)

export const subjectPrefix: Rule<string> = (value) =>
  value.split('.').every((token) => /^[^\s*>]+$/.test(token))
    ? accept(value)
    : refuse(`must be subject tokens joined by ".", without spaces or wildcards${got(value)}`)

export const keyValuePairs: Rule<Record<string, string>> = (value) => {
  const pairs = parseResourceAttributes(value)
  return pairs === undefined
    ? refuse(`must be key=value pairs separated by commas, values percent-encoded${got(value)}`)
    : accept(pairs)
}

export function secret(minBytes: number): Rule<Uint8Array> {
  return (value) => {
    const bytes = new TextEncoder().encode(value)
    return bytes.byteLength >= minBytes ? accept(bytes) : refuse(`must be at least ${minBytes} bytes long`)
  }
}

const KEYS_RULE = 'must be base64 keys of 32 bytes, comma-separated'

// Key-encryption keys: the refusal names an entry by its place, never its text.
export const keys: Rule<KeyEncryptionKeys> = (value) => {
  const parsed = parseKeyEncryptionKeys(value)
  return typeof parsed === 'string' ? refuse(`${KEYS_RULE}: ${parsed}`) : accept(parsed)
}

export const keysFile: Rule<KeyEncryptionKeys> = (path) => {
  let held: string
  try {
    held = readFileSync(path, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable'
    return refuse(`must name a readable file of keys: ${path} cannot be read (${code})`)
  }
  const parsed = parseKeyEncryptionKeys(held)
  return typeof parsed === 'string'
    ? refuse(`must name a file of keys: in ${path}, ${parsed}`)
    : accept(parsed)
}

// The OTLP exporter's own variables (OTEL_EXPORTER_OTLP_*, of every signal), which it reads itself
// and whose bad values it would only warn about and pass by: checked here by their last word.
export const otlpVariable: Rule<string> = (value, name) => {
  const last = /_(TIMEOUT|COMPRESSION|HEADERS|ENDPOINT)$/.exec(name)?.[1]
  const checked =
    last === 'TIMEOUT'
      ? integer(1, 3_600_000)(value, name)
      : last === 'COMPRESSION'
        ? oneOf(['gzip', 'none'])(value, name)
        : last === 'HEADERS'
          ? keyValuePairs(value, name)
          : last === 'ENDPOINT'
            ? webUrl(value)
            : text(value, name)
  return 'refused' in checked ? checked : accept(value)
}
