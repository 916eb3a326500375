import { Buffer } from 'node:buffer'
import { Value } from '@sinclair/typebox/value'
import { EARLIER_WRAPPED_KEY_BYTES, unwrapOwnerKey, WRAPPED_KEY_BYTES } from '../crypto/envelope.ts'
import type { Keyring } from '../crypto/keyring.ts'
import { isOwner, OWNER_RULE } from '../domain/plant.ts'
import {
  checkPlainEvent,
  checkSealedEvent,
  isValidTime,
  type Pseudonym,
  parseExportLine,
} from './event-line.ts'
import {
  ErasedLine,
  EXPORT_FORMAT,
  EXPORT_VERSION,
  HeaderLine,
  KeyLine,
  RAW_KEYS_VERSION,
} from './export-format.ts'
import type { StagedLine } from './import-staging.ts'
import { base64Bytes, type ImportedOwnerKey, KEY_BYTES, ownerKey } from './sealed-event.ts'

// A line to stage, nothing to stage (the header), or the rule the line breaks.
export type LineChecker = (
  text: string,
  line: number,
) => Promise<StagedLine | undefined | { refused: string }>

// How many owners' keys are held ready at once; the others wait as their bytes.
const READY_KEYS = 1_000

// Checks an export's lines one by one, in order (transfer/export-format.ts): the header says the
// version; a version 2 file's key and erased lines come before its events and say, for each
// pseudonym, whether its events can be opened (and with which key) or only their envelope checked.
// With `append`, an event whose pseudonym the file does not name is left to the target store,
// which must have erased it.
// A key line's key is wrapped under one of the keyring's key-encryption keys (the exporting store's
// must be among them), in today's form or the earlier one, or raw in a version 2 file: it is
// unwrapped here, the events checked with it, and staged wrapped again, in the service, under the
// importing store's first key-encryption key, bound to its pseudonym.
// What the lines read so far said: each pseudonym's key (raw, with its owner and line) or
// erasure, each owner's key line, and the keys held ready to open events.
type LinesSeen = {
  keys: Map<string, { owner: string; key: Uint8Array; line: number }>
  owners: Map<string, number>
  erased: Map<string, number>
  ready: Map<string, ImportedOwnerKey>
}

export function lineChecker({ append, keyring }: { append: boolean; keyring: Keyring }): LineChecker {
  let version: 1 | 2 | undefined
  let eventsBegun = false
  const seen: LinesSeen = { keys: new Map(), owners: new Map(), erased: new Map(), ready: new Map() }

  const pseudonymOf = async (pseudonym: string): Promise<Pseudonym | undefined> => {
    const found = seen.keys.get(pseudonym)
    if (found) {
      let key = seen.ready.get(pseudonym)
      if (!key) {
        if (seen.ready.size >= READY_KEYS) seen.ready.clear()
        key = ownerKey(found.key)
        seen.ready.set(pseudonym, key)
      }
      return { kind: 'key', owner: found.owner, key, line: found.line }
    }
    if (seen.erased.has(pseudonym)) return { kind: 'erased' }
    return append ? { kind: 'unresolved' } : undefined
  }

  return async (text, line) => {
    const parsed = parseExportLine(text)
    if ('refused' in parsed) return parsed
    const { value } = parsed
    if (version === undefined) {
      version = isObjectWith(value, 'format') ? 2 : 1
      if (version === 2) return checkHeader(value)
    }
    if (version === 1) {
      const checked = checkPlainEvent(value)
      return 'refused' in checked ? checked : { kind: 'event', line, text, ...checked }
    }
    if (isObjectWith(value, 'format')) {
      return { refused: 'a second header: import one export at a time (exports cannot be joined)' }
    }
    if (isObjectWith(value, 'key') || isObjectWith(value, 'erased')) {
      if (eventsBegun) return { refused: 'key and erased lines come before the events' }
      return isObjectWith(value, 'key')
        ? checkKey(seen, keyring, value, line)
        : checkErased(seen, value, line)
    }
    eventsBegun = true
    const checked = await checkSealedEvent(value, pseudonymOf)
    return 'refused' in checked ? checked : { kind: 'event', line, text, ...checked }
  }
}

function checkHeader(value: unknown): undefined | { refused: string } {
  if (!Value.Check(HeaderLine, value) || value.format !== EXPORT_FORMAT) {
    return { refused: `the header must be {"format": "${EXPORT_FORMAT}", "version": ${EXPORT_VERSION}}` }
  }
  if (value.version !== EXPORT_VERSION && value.version !== RAW_KEYS_VERSION) {
    return {
      refused: `export version ${value.version} is unknown (known: ${EXPORT_VERSION}, ${RAW_KEYS_VERSION}, and 1, a file without this header)`,
    }
  }
  return undefined
}

function checkKey(
  seen: LinesSeen,
  keyring: Keyring,
  value: unknown,
  line: number,
): StagedLine | { refused: string } {
  if (!Value.Check(KeyLine, value)) return schemaRefusal(KeyLine, value)
  const { pseudonym, owner, key } = value.key
  if (!isOwner(owner)) return { refused: `key.owner: ${OWNER_RULE}` }
  const bytes = base64Bytes(key)
  if (
    bytes === undefined ||
    ![KEY_BYTES, WRAPPED_KEY_BYTES, EARLIER_WRAPPED_KEY_BYTES].includes(bytes.length)
  ) {
    return {
      refused: `key.key: an owner's key is ${WRAPPED_KEY_BYTES} (or ${EARLIER_WRAPPED_KEY_BYTES}) bytes in base64, wrapped (${KEY_BYTES}, raw, in a version ${RAW_KEYS_VERSION} export)`,
    }
  }
  const raw = bytes.length === KEY_BYTES ? bytes : unwrapped(keyring, bytes, pseudonym)
  if ('refused' in raw) return raw
  if ('missing' in raw) {
    return {
      refused: `key.key is wrapped under key-encryption key ${raw.missing}, which KEY_ENCRYPTION_KEYS lacks: add the exporting store's after the first (docs/keys.md)`,
    }
  }
  const again = seen.keys.get(pseudonym)?.line ?? seen.erased.get(pseudonym)
  if (again !== undefined) return { refused: `pseudonym ${pseudonym} is at line ${again} already` }
  const otherKey = seen.owners.get(owner)
  if (otherKey !== undefined) {
    return {
      refused: `owner ${JSON.stringify(owner)} has a key at line ${otherKey} already: two keys for one sub would collide in plants`,
    }
  }
  seen.keys.set(pseudonym, { owner, key: raw, line })
  seen.owners.set(owner, line)
  const wrapped = Buffer.from(keyring.wrap({ pseudonym, raw })).toString('base64')
  return { kind: 'key', line, pseudonym, owner, key: wrapped }
}

function unwrapped(keyring: Keyring, bytes: Uint8Array, pseudonym: string) {
  try {
    return unwrapOwnerKey(bytes, keyring.keks, pseudonym)
  } catch {
    return {
      refused: `key.key does not open with its key-encryption key: changed bytes, or another pseudonym's key`,
    }
  }
}

function checkErased(seen: LinesSeen, value: unknown, line: number): StagedLine | { refused: string } {
  if (!Value.Check(ErasedLine, value)) return schemaRefusal(ErasedLine, value)
  const { pseudonym, erasedAt } = value.erased
  if (!isValidTime(erasedAt)) return { refused: `erased.erasedAt ${erasedAt} is not a valid time` }
  const again = seen.keys.get(pseudonym)?.line ?? seen.erased.get(pseudonym)
  if (again !== undefined) return { refused: `pseudonym ${pseudonym} is at line ${again} already` }
  seen.erased.set(pseudonym, line)
  return { kind: 'erased', line, pseudonym, erasedAt }
}

function schemaRefusal(schema: Parameters<typeof Value.Errors>[0], value: unknown): { refused: string } {
  const first = Value.Errors(schema, value).First()
  return { refused: first ? `${first.path || '/'} ${first.message}` : 'not a line of an export' }
}

function isObjectWith(value: unknown, key: string): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && key in value
}
