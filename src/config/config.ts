import type { KeyEncryptionKeys } from '../crypto/key-encryption-keys.ts'
import { withTargetSessionAttrs } from '../database/target-session-attrs.ts'
import { Failure, isFailure } from '../shared/errors.ts'
import type { Checked } from './setting-rules.ts'
import { type Sampler, SETTINGS, type Setting, type SettingName } from './settings.ts'

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

// What a process needs set beside valid values: the server needs both, `token issue` the first.
export type Need = 'token keys' | 'key-encryption keys'

// The only reader of the environment, for the variables of src/config/settings.ts and with their
// defaults. Every variable set is checked by its row's rule, whether what reads it runs or not;
// then the settings that go together are checked together, and the `needs`. Every problem is named
// in one line, all of them at once: a start that stopped on the first would take one start per
// mistake.
export function loadConfig(env: Env, needs: Need[] = []): Config {
  const problems = refusedSettings(env)
  const refuse = (message: string) => {
    problems.push(message)
  }
  const config = readConfig(env, refuse)
  for (const need of needs) {
    try {
      requireSetting(config, env, need)
    } catch (error) {
      if (!isFailure(error, 'BAD_SETTING')) throw error
      refuse(error.message)
    }
  }
  if (problems.length > 0) throw new Failure('BAD_SETTING', problems.join('\n'))
  return config
}

// One line for each variable set whose value its row's rule refuses, in the table's order; a
// family's row (a name ending in `*`) checks every variable of the family.
function refusedSettings(env: Env): string[] {
  const problems: string[] = []
  for (const [row, { rule }] of Object.entries(SETTINGS as Record<string, Setting>)) {
    const names = row.endsWith('*')
      ? Object.keys(env)
          .filter((name) => name.startsWith(row.slice(0, -1)) && !Object.hasOwn(SETTINGS, name))
          .sort()
      : [row]
    for (const name of names) {
      const given = env[name]?.trim()
      if (given === undefined || given === '') continue
      const read = rule(given, name)
      if ('refused' in read) problems.push(`${name} ${read.refused}`)
    }
  }
  return problems
}

type Value<N extends SettingName> = (typeof SETTINGS)[N]['rule'] extends (
  value: string,
  name: string,
) => Checked<infer T>
  ? T
  : never

type Defaulted = {
  [N in SettingName]: (typeof SETTINGS)[N] extends { fallback: string } ? N : never
}[SettingName]

// A variable's value as its rule reads it, or its default when it is unset, blank or refused (the
// refusal is already among the problems); undefined for one unset that has no default.
function setting<N extends SettingName>(
  env: Env,
  name: N,
): N extends Defaulted ? Value<N> : Value<N> | undefined
function setting(env: Env, name: SettingName): unknown {
  const row: Setting = SETTINGS[name]
  for (const given of [env[name]?.trim(), row.fallback]) {
    if (given === undefined || given === '') continue
    const read = row.rule(given, name)
    if ('value' in read) return read.value
  }
  return undefined
}

// Whether the variable is set at all, whatever its value: which storage a start chose does not
// change with a typo in the URL.
const given = (env: Env, name: SettingName) => (env[name]?.trim() ?? '') !== ''

function readConfig(env: Env, refuse: (message: string) => void): Config {
  const postgres = given(env, 'DATABASE_URL')
  const dataDir = setting(env, 'DATA_DIR')
  const inMemory = !postgres && dataDir === IN_MEMORY
  const secret = setting(env, 'AUTH_JWT_SECRET')
  const jwksUrl = setting(env, 'AUTH_JWKS_URL')
  const keys = keyEncryptionKeys(env, refuse)
  return {
    host: setting(env, 'HOST'),
    port: setting(env, 'PORT'),
    logLevel: setting(env, 'LOG_LEVEL'),
    logFormat: setting(env, 'LOG_FORMAT'),
    requestTimeoutMs: setting(env, 'REQUEST_TIMEOUT_MS'),
    logSubject: setting(env, 'LOG_SUBJECT') === 'true',
    dataDir,
    storage: !postgres
      ? inMemory
        ? { kind: 'memory' }
        : { kind: 'embedded', dataDir, keys }
      : {
          kind: 'postgres',
          url:
            withTargetSessionAttrs(
              setting(env, 'DATABASE_URL') ?? '',
              setting(env, 'PGTARGETSESSIONATTRS'),
            ) ?? '',
          poolSize: setting(env, 'DATABASE_POOL_SIZE'),
          statementTimeoutMs: setting(env, 'DATABASE_STATEMENT_TIMEOUT_MS'),
          keys,
        },
    auth: {
      secret,
      jwksUrl,
      jwksCooldownMs: setting(env, 'AUTH_JWKS_COOLDOWN_MS'),
      jwksCacheMaxAgeMs: setting(env, 'AUTH_JWKS_CACHE_MAX_AGE_MS'),
      issuer: setting(env, 'AUTH_ISSUER'),
      audience: setting(env, 'AUTH_AUDIENCE'),
      // Generated into DATA_DIR on first use: only a store on disk without a database server has one.
      useLocalSecret:
        !given(env, 'AUTH_JWT_SECRET') && !given(env, 'AUTH_JWKS_URL') && !postgres && !inMemory,
    },
    changeStreamsPerOwner: setting(env, 'CHANGE_STREAMS_PER_OWNER'),
    cors: corsConfig(env),
    feed: feedConfig(env),
    readReplicas: readReplicasConfig(env, postgres, refuse),
    tracing: tracingConfig(env),
  }
}

// The standard OpenTelemetry variables, as their specification reads them: the traces endpoint as
// given, or the base endpoint with `v1/traces` appended. No endpoint, no tracing: the OTLP default
// (localhost:4318) would post spans to nothing on most machines.
function tracingConfig(env: Env): TracingConfig | undefined {
  const signal = setting(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')
  const base = setting(env, 'OTEL_EXPORTER_OTLP_ENDPOINT')
  if (setting(env, 'OTEL_SDK_DISABLED') === 'true' || (signal === undefined && base === undefined))
    return undefined
  const url = signal ?? `${base}${base?.endsWith('/') ? '' : '/'}v1/traces`
  const { 'service.name': resourceServiceName, ...resourceAttributes } =
    setting(env, 'OTEL_RESOURCE_ATTRIBUTES') ?? {}
  // The specification's order: OTEL_SERVICE_NAME, then the resource's service.name, then the default.
  const serviceName =
    (given(env, 'OTEL_SERVICE_NAME') ? undefined : resourceServiceName) ?? setting(env, 'OTEL_SERVICE_NAME')
  return {
    url,
    serviceName,
    resourceAttributes,
    sampler: setting(env, 'OTEL_TRACES_SAMPLER'),
    ratio: setting(env, 'OTEL_TRACES_SAMPLER_ARG'),
  }
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
    // A secret or key set that was given but refused is named already.
    if (!given(env, 'AUTH_JWT_SECRET') && !given(env, 'AUTH_JWKS_URL')) requireTokenKeys(config)
    return
  }
  // PostgreSQL has no place for a key-encryption key the service could make: it must be given one.
  if (
    config.storage.kind === 'postgres' &&
    !given(env, 'KEY_ENCRYPTION_KEYS') &&
    !given(env, 'KEY_ENCRYPTION_KEYS_FILE')
  )
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
// left to what opens the store (opening/open-store.ts).
function keyEncryptionKeys(env: Env, refuse: (message: string) => void): KeyEncryptionKeys | undefined {
  if (given(env, 'KEY_ENCRYPTION_KEYS') && given(env, 'KEY_ENCRYPTION_KEYS_FILE'))
    refuse('KEY_ENCRYPTION_KEYS and KEY_ENCRYPTION_KEYS_FILE are both set: set one')
  return setting(env, 'KEY_ENCRYPTION_KEYS') ?? setting(env, 'KEY_ENCRYPTION_KEYS_FILE')
}

function readReplicasConfig(
  env: Env,
  onPostgres: boolean,
  refuse: (message: string) => void,
): ReadReplicasConfig | undefined {
  const urls = setting(env, 'DATABASE_READ_URLS')
  if (urls === undefined) return undefined
  if (!onPostgres)
    refuse(
      'DATABASE_READ_URLS names replicas of DATABASE_URL, which is unset: the embedded store has no replicas',
    )
  return { urls, waitMs: setting(env, 'READ_WAIT_MS'), maxLagMs: setting(env, 'READ_MAX_LAG_MS') }
}

function corsConfig(env: Env): CorsConfig | undefined {
  const origins = setting(env, 'CORS_ORIGINS')
  return origins === undefined ? undefined : { origins }
}

function feedConfig(env: Env): FeedConfig | undefined {
  const servers = setting(env, 'EVENTS_NATS_URL')
  if (servers === undefined) return undefined
  return {
    servers,
    stream: setting(env, 'EVENTS_NATS_STREAM'),
    subjectPrefix: setting(env, 'EVENTS_NATS_SUBJECT_PREFIX'),
    source: setting(env, 'EVENTS_SOURCE'),
    replicas: setting(env, 'EVENTS_NATS_REPLICAS'),
  }
}
