import { readFileSync } from 'node:fs'
import { type KeyEncryptionKeys, parseKeyEncryptionKeys } from '../crypto/key-encryption-keys.ts'
import { TARGET_SESSION_ATTRS, withTargetSessionAttrs } from '../database/target-session-attrs.ts'
import { Failure, isFailure } from '../shared/errors.ts'
import { parseResourceAttributes } from './resource-attributes.ts'
import { SETTINGS, type Setting, type SettingName } from './settings.ts'

export type Config = {
  host: string
  port: number
  logLevel: string
  // The longest a request waits for its response before it is answered 503.
  requestTimeoutMs: number
  // 'auto': human-readable lines when stdout is a terminal, JSON lines otherwise.
  logFormat: 'auto' | 'json' | 'pretty'
  // Request lines name the caller's subject (LOG_SUBJECT=true), which an erasure cannot take back.
  logSubject: boolean
  storage:
    | {
        kind: 'postgres'
        url: string
        poolSize: number
        statementTimeoutMs: number
        keys?: KeyEncryptionKeys
      }
    // `keys` unset: the KEK generated into DATA_DIR (data-dir/local-keys.ts).
    | { kind: 'embedded'; dataDir: string; keys?: KeyEncryptionKeys }
    // DATA_DIR=memory:, for test suites: nothing on disk, gone when the process ends.
    // `keys` unset: a random key-encryption key of the store's own.
    | { kind: 'memory'; keys?: KeyEncryptionKeys }
  // The directory of the generated local secret (embedded default) and of the embedded database.
  dataDir: string
  auth: {
    secret?: Uint8Array
    jwksUrl?: string
    // The shortest wait between two fetches of the key set, however many unknown `kid`s arrive.
    jwksCooldownMs: number
    // How long a fetched key set is trusted before it is fetched again.
    jwksCacheMaxAgeMs: number
    issuer?: string
    audience?: string
    useLocalSecret: boolean
  }
  // The most change streams one owner holds open on this instance (docs/live-changes.md).
  changeStreamsPerOwner: number
  // The origins whose pages may call the API from a browser; undefined when CORS_ORIGINS is unset.
  cors?: CorsConfig
  // The event feed to NATS JetStream (docs/feed.md); undefined when EVENTS_NATS_URL is unset.
  feed?: FeedConfig
  // Streaming replicas that serve listings (docs/operating.md, Scaling out); undefined when
  // DATABASE_READ_URLS is unset.
  readReplicas?: ReadReplicasConfig
  // Spans over OTLP/HTTP; undefined when no endpoint is set or OTEL_SDK_DISABLED=true.
  tracing?: TracingConfig
}

export type TracingConfig = {
  // Where spans are posted, `/v1/traces` included.
  url: string
  serviceName: string
  // The resource's other attributes (OTEL_RESOURCE_ATTRIBUTES, its service.name taken out).
  resourceAttributes: Record<string, string>
  sampler: Sampler
  // The share of traces the `traceidratio` samplers keep.
  ratio: number
}

export const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const
export type Sampler = (typeof SAMPLERS)[number]

export type FeedConfig = {
  servers: string[]
  stream: string
  subjectPrefix: string
  source: string
  // How many copies of the stream the NATS cluster keeps, when the service creates it.
  replicas: number
}

// `*`: any origin (no credentials are involved: tokens travel in the Authorization header).
export type CorsConfig = { origins: '*' | string[] }

export type ReadReplicasConfig = {
  urls: string[]
  // How long a read that names a position waits for a replica to apply it before it asks the primary.
  waitMs: number
  // A replica further behind than this serves no read until it catches up.
  maxLagMs: number
}

type Env = Record<string, string | undefined>

// The DATA_DIR value that keeps the embedded database in memory.
export const IN_MEMORY = 'memory:'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']
const LOG_FORMATS: Config['logFormat'][] = ['auto', 'json', 'pretty']

// What a process needs set beside valid values: the server needs both, `token issue` the first.
export type Need = 'token keys' | 'key-encryption keys'

// How a setting is read: `check` runs a reading that may throw a bad setting, `refuse` names one;
// either way the problem is kept and the load goes on to the next setting (see loadConfig).
type Reading = { check: <T>(read: () => T) => T; refuse: (message: string) => void }

// The only reader of the environment, for the variables of src/config/settings.ts and with their
// defaults. Every bad value, and every missing setting of `needs`, is named in one line, all of them
// at once: a start that stopped on the first would take one start per mistake.
export function loadConfig(env: Env, needs: Need[] = []): Config {
  const problems: string[] = []
  const refuse = (message: string) => {
    problems.push(message)
  }
  const check: Reading['check'] = (read) => {
    try {
      return read()
    } catch (error) {
      if (!isFailure(error, 'BAD_SETTING')) throw error
      refuse(error.message)
      // Never read: the problems stop the load below.
      return undefined as never
    }
  }
  const config = readConfig(env, { check, refuse })
  for (const need of needs) check(() => requireSetting(config, env, need))
  if (problems.length > 0) throw new Failure('BAD_SETTING', problems.join('\n'))
  return config
}

function readConfig(env: Env, reading: Reading): Config {
  const { check, refuse } = reading
  const dataDir = text(env, 'DATA_DIR')
  const databaseUrl = text(env, 'DATABASE_URL')
  const postgres = databaseUrl !== undefined
  if (postgres && !/^postgres(ql)?:\/\//.test(databaseUrl))
    refuse('DATABASE_URL must be a postgres:// or postgresql:// URL')
  const secretText = text(env, 'AUTH_JWT_SECRET')
  const secret = secretText === undefined ? undefined : new TextEncoder().encode(secretText)
  if (secret && secret.byteLength < 32) refuse('AUTH_JWT_SECRET must be at least 32 bytes long')
  const jwksUrl = text(env, 'AUTH_JWKS_URL')
  if (jwksUrl !== undefined && !URL.canParse(jwksUrl)) refuse('AUTH_JWKS_URL must be a URL')
  const inMemory = !postgres && dataDir === IN_MEMORY
  const keys = check(() => keyEncryptionKeys(env))
  return {
    host: text(env, 'HOST'),
    port: check(() => integer(env, 'PORT', 0, 65535)),
    logLevel: check(() => oneOf(env, 'LOG_LEVEL', LOG_LEVELS)),
    logFormat: check(() => oneOf(env, 'LOG_FORMAT', LOG_FORMATS)),
    requestTimeoutMs: check(() => integer(env, 'REQUEST_TIMEOUT_MS', 100, 600_000)),
    logSubject: check(() => oneOf(env, 'LOG_SUBJECT', ['true', 'false'])) === 'true',
    dataDir,
    storage: !postgres
      ? inMemory
        ? { kind: 'memory' }
        : { kind: 'embedded', dataDir, keys }
      : {
          kind: 'postgres',
          url: check(() => postgresUrl(databaseUrl, text(env, 'PGTARGETSESSIONATTRS'))),
          poolSize: check(() => integer(env, 'DATABASE_POOL_SIZE', 1, 1000)),
          statementTimeoutMs: check(() => integer(env, 'DATABASE_STATEMENT_TIMEOUT_MS', 100, 600_000)),
          keys,
        },
    auth: {
      secret,
      jwksUrl,
      jwksCooldownMs: check(() => integer(env, 'AUTH_JWKS_COOLDOWN_MS', 0, 3_600_000)),
      jwksCacheMaxAgeMs: check(() => integer(env, 'AUTH_JWKS_CACHE_MAX_AGE_MS', 1000, 86_400_000)),
      issuer: text(env, 'AUTH_ISSUER'),
      audience: text(env, 'AUTH_AUDIENCE'),
      // Generated into DATA_DIR on first use: only a store on disk without a database server has one.
      useLocalSecret: !secret && !jwksUrl && !postgres && !inMemory,
    },
    changeStreamsPerOwner: check(() => integer(env, 'CHANGE_STREAMS_PER_OWNER', 1, 100_000)),
    cors: check(() => corsConfig(text(env, 'CORS_ORIGINS'))),
    feed: feedConfig(env, reading),
    readReplicas: readReplicasConfig(env, postgres, reading),
    tracing: tracingConfig(env, reading),
  }
}

// The standard OpenTelemetry variables, as their specification reads them: the traces endpoint as
// given, or the base endpoint with `v1/traces` appended. No endpoint, no tracing: the OTLP default
// (localhost:4318) would post spans to nothing on most machines.
function tracingConfig(env: Env, { check, refuse }: Reading): TracingConfig | undefined {
  const disabled = text(env, 'OTEL_SDK_DISABLED').toLowerCase()
  if (disabled !== 'true' && disabled !== 'false')
    refuse(`OTEL_SDK_DISABLED must be true or false, got "${disabled}"`)
  const sampler = check(() => oneOf(env, 'OTEL_TRACES_SAMPLER', [...SAMPLERS]))
  const ratioText = text(env, 'OTEL_TRACES_SAMPLER_ARG')
  const ratio = Number(ratioText)
  if (!/^\d+(\.\d+)?$/.test(ratioText) || ratio > 1)
    refuse(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got "${ratioText}"`)
  const resourceText = text(env, 'OTEL_RESOURCE_ATTRIBUTES')
  const resource = parseResourceAttributes(resourceText ?? '')
  if (resource === undefined)
    refuse(
      `OTEL_RESOURCE_ATTRIBUTES must be key=value pairs separated by commas, values percent-encoded, got "${resourceText}"`,
    )
  const { 'service.name': resourceServiceName, ...resourceAttributes } = resource ?? {}
  const signal = text(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')
  const base = text(env, 'OTEL_EXPORTER_OTLP_ENDPOINT')
  if (disabled === 'true' || (signal === undefined && base === undefined)) return undefined
  const [name, url] =
    signal === undefined
      ? ['OTEL_EXPORTER_OTLP_ENDPOINT', `${base}${base?.endsWith('/') ? '' : '/'}v1/traces`]
      : ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', signal]
  if (!/^https?:$/.test(URL.parse(url)?.protocol ?? ''))
    refuse(`${name} must be an http:// or https:// URL, got "${signal ?? base}"`)
  // The specification's order: OTEL_SERVICE_NAME, then the resource's service.name, then the default.
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || resourceServiceName || text(env, 'OTEL_SERVICE_NAME')
  return { url, serviceName, resourceAttributes, sampler, ratio }
}

// Stops what checks or signs tokens (the server, `token issue`) when nothing could: with
// DATABASE_URL or in memory there is no local secret to fall back on.
export function requireTokenKeys({ auth, storage }: Config): void {
  if (auth.secret || auth.jwksUrl || auth.useLocalSecret) return
  throw new Failure(
    'BAD_SETTING',
    storage.kind === 'memory'
      ? `DATA_DIR=${IN_MEMORY} keeps nothing on disk, so there is no local secret: set AUTH_JWT_SECRET (32+ bytes) or AUTH_JWKS_URL`
      : 'DATABASE_URL is set but no token verification is configured: set AUTH_JWT_SECRET (32+ bytes) or AUTH_JWKS_URL',
  )
}

function requireSetting(config: Config, env: Env, need: Need): void {
  if (need === 'token keys') {
    requireTokenKeys(config)
    return
  }
  // PostgreSQL has no place for a key-encryption key the service could make: it must be given one.
  const given = [text(env, 'KEY_ENCRYPTION_KEYS'), text(env, 'KEY_ENCRYPTION_KEYS_FILE')]
  if (config.storage.kind === 'postgres' && given.every((value) => value === undefined))
    throw missingKeyEncryptionKeys()
}

// On PostgreSQL without KEY_ENCRYPTION_KEYS: said at a start's load, and by what opens the store
// for a command that needs them (opening/open-store.ts).
export function missingKeyEncryptionKeys(): Failure {
  return new Failure(
    'BAD_SETTING',
    'DATABASE_URL is set but KEY_ENCRYPTION_KEYS is not: set it (or KEY_ENCRYPTION_KEYS_FILE) to base64 keys of 32 bytes, comma-separated, kept outside the database (`openssl rand -base64 32` makes one)',
  )
}

// KEY_ENCRYPTION_KEYS, or the file KEY_ENCRYPTION_KEYS_FILE names; whether a command needs them is
// left to what opens the store (opening/open-store.ts). No message holds a key's text.
function keyEncryptionKeys(env: Env): KeyEncryptionKeys | undefined {
  const given = text(env, 'KEY_ENCRYPTION_KEYS')
  const file = text(env, 'KEY_ENCRYPTION_KEYS_FILE')
  if (given !== undefined && file !== undefined) {
    throw new Failure('BAD_SETTING', 'KEY_ENCRYPTION_KEYS and KEY_ENCRYPTION_KEYS_FILE are both set: set one')
  }
  const name = given === undefined ? 'KEY_ENCRYPTION_KEYS_FILE' : 'KEY_ENCRYPTION_KEYS'
  const value = given ?? (file === undefined ? undefined : readKeysFile(file))
  if (value === undefined) return undefined
  const keys = parseKeyEncryptionKeys(value)
  if (typeof keys === 'string') throw new Failure('BAD_SETTING', `${name}: ${keys}`)
  return keys
}

function readKeysFile(path: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable'
    throw new Failure('BAD_SETTING', `KEY_ENCRYPTION_KEYS_FILE: ${path} cannot be read (${code})`)
  }
}

function postgresUrl(databaseUrl: string, targetSessionAttrs: string | undefined): string {
  const url = withTargetSessionAttrs(databaseUrl, targetSessionAttrs)
  if (url === undefined) {
    throw new Failure(
      'BAD_SETTING',
      `DATABASE_URL: target_session_attrs must be one of ${TARGET_SESSION_ATTRS.join(', ')}`,
    )
  }
  return url
}

function readReplicasConfig(
  env: Env,
  onPostgres: boolean,
  { check }: Reading,
): ReadReplicasConfig | undefined {
  const waitMs = check(() => integer(env, 'READ_WAIT_MS', 0, 10_000))
  const maxLagMs = check(() => integer(env, 'READ_MAX_LAG_MS', 100, 3_600_000))
  const listed = text(env, 'DATABASE_READ_URLS')
  if (listed === undefined) return undefined
  return check(() => replicaUrls(listed, onPostgres, waitMs, maxLagMs))
}

function replicaUrls(
  listed: string,
  onPostgres: boolean,
  waitMs: number,
  maxLagMs: number,
): ReadReplicasConfig {
  if (!onPostgres) {
    throw new Failure(
      'BAD_SETTING',
      'DATABASE_READ_URLS names replicas of DATABASE_URL, which is unset: the embedded store has no replicas',
    )
  }
  const urls = listed.split(',').map((url) => url.trim())
  if (!urls.every(isPostgresUrl)) {
    throw new Failure(
      'BAD_SETTING',
      'DATABASE_READ_URLS must be postgres:// or postgresql:// URLs with a host, comma-separated',
    )
  }
  return { urls, waitMs, maxLagMs }
}

// One server per URL, with a host and at most a database name as its path.
function isPostgresUrl(text: string): boolean {
  const url = URL.parse(text)
  if (url === null || /\s/.test(text)) return false
  return /^postgres(ql)?:$/.test(url.protocol) && url.hostname !== '' && /^(\/[^/]*)?$/.test(url.pathname)
}

// Origins as a browser sends them (`https://app.example.com:8443`: no path, no default port, in
// lower case), so that comparing is exact; anything else would never match and is refused.
function corsConfig(given: string | undefined): CorsConfig | undefined {
  if (given === undefined) return undefined
  if (given === '*') return { origins: '*' }
  const origins = given.split(',').map((origin) => origin.trim())
  for (const origin of origins) {
    const url = URL.parse(origin)
    const canonical = url && /^https?:$/.test(url.protocol) ? url.origin : undefined
    if (canonical === origin) continue
    const hint = canonical === undefined ? '' : ` (did you mean "${canonical}"?)`
    throw new Failure(
      'BAD_SETTING',
      `CORS_ORIGINS must be * or http(s) origins (scheme://host[:port], no path), comma-separated: "${origin}" is not one${hint}`,
    )
  }
  return { origins }
}

function feedConfig(env: Env, { check, refuse }: Reading): FeedConfig | undefined {
  const urls = text(env, 'EVENTS_NATS_URL')
  if (urls === undefined) return undefined
  const servers = urls.split(',').map((url) => url.trim())
  if (!servers.every(isNatsUrl))
    refuse(
      `EVENTS_NATS_URL must be nats:// or tls:// URLs with host and port, comma-separated, got "${urls}"`,
    )
  const stream = text(env, 'EVENTS_NATS_STREAM')
  if (!/^[^\s.*>/\\]+$/.test(stream))
    refuse(`EVENTS_NATS_STREAM must be a stream name without spaces, ".", "*", ">" or slashes`)
  const subjectPrefix = text(env, 'EVENTS_NATS_SUBJECT_PREFIX')
  if (!subjectPrefix.split('.').every((token) => /^[^\s*>]+$/.test(token)))
    refuse('EVENTS_NATS_SUBJECT_PREFIX must be subject tokens joined by ".", without spaces or wildcards')
  return {
    servers,
    stream,
    subjectPrefix,
    source: text(env, 'EVENTS_SOURCE'),
    replicas: check(() => integer(env, 'EVENTS_NATS_REPLICAS', 1, 5)),
  }
}

function isNatsUrl(text: string): boolean {
  const url = URL.parse(text)
  if (url === null) return false
  return (url.protocol === 'nats:' || url.protocol === 'tls:') && url.hostname !== '' && url.port !== ''
}

function oneOf<T extends string>(env: Env, name: SettingName, values: T[]): T {
  const value = text(env, name) as T
  if (!values.includes(value)) throw new Failure('BAD_SETTING', `${name} must be one of ${values.join(', ')}`)
  return value
}

type Defaulted = {
  [N in SettingName]: (typeof SETTINGS)[N] extends { fallback: string } ? N : never
}[SettingName]

// The variable's value, trimmed, or its default when it is unset or blank.
function text<N extends SettingName>(env: Env, name: N): N extends Defaulted ? string : string | undefined
function text(env: Env, name: SettingName): string | undefined {
  const value = env[name]?.trim()
  if (value !== undefined && value !== '') return value
  const setting: Setting = SETTINGS[name]
  return setting.fallback
}

function integer(env: Env, name: Defaulted, min: number, max: number): number {
  const given = text(env, name)
  const value = Number(given)
  if (!/^\d+$/.test(given) || value < min || value > max) {
    throw new Failure('BAD_SETTING', `${name} must be an integer from ${min} to ${max}, got "${given}"`)
  }
  return value
}
