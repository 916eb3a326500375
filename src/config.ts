import { Failure } from './errors.ts'
import { TARGET_SESSION_ATTRS, withTargetSessionAttrs } from './store/target-session-attrs.ts'

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
    | { kind: 'postgres'; url: string; poolSize: number; statementTimeoutMs: number }
    | { kind: 'embedded'; dataDir: string }
    // DATA_DIR=memory:, for test suites: nothing on disk, gone when the process ends.
    | { kind: 'memory' }
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
  // The most change streams one owner holds open on this instance (CONTRACT §9).
  changeStreamsPerOwner: number
  // The event feed to NATS JetStream (CONTRACT §8); undefined when EVENTS_NATS_URL is unset.
  feed?: FeedConfig
  // Streaming replicas that serve listings (CONTRACT §10); undefined when DATABASE_READ_URLS is unset.
  readReplicas?: ReadReplicasConfig
}

export type FeedConfig = {
  servers: string[]
  stream: string
  subjectPrefix: string
  source: string
  // How many copies of the stream the NATS cluster keeps, when the service creates it.
  replicas: number
}

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

// The only reader of the environment. Every bad value stops the start with the variable's name.
export function loadConfig(env: Env): Config {
  const dataDir = nonEmpty(env, 'DATA_DIR') ?? './data'
  const databaseUrl = nonEmpty(env, 'DATABASE_URL')
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new Failure('BAD_SETTING', 'DATABASE_URL must be a postgres:// or postgresql:// URL')
  }
  const secretText = nonEmpty(env, 'AUTH_JWT_SECRET')
  const secret = secretText === undefined ? undefined : new TextEncoder().encode(secretText)
  if (secret && secret.byteLength < 32)
    throw new Failure('BAD_SETTING', 'AUTH_JWT_SECRET must be at least 32 bytes long')
  const jwksUrl = nonEmpty(env, 'AUTH_JWKS_URL')
  if (jwksUrl !== undefined && !URL.canParse(jwksUrl))
    throw new Failure('BAD_SETTING', 'AUTH_JWKS_URL must be a URL')
  const useLocalSecret = !secret && !jwksUrl
  if (useLocalSecret && databaseUrl !== undefined) {
    throw new Failure(
      'BAD_SETTING',
      'DATABASE_URL is set but no token verification is configured: set AUTH_JWT_SECRET (32+ bytes) or AUTH_JWKS_URL',
    )
  }
  const inMemory = databaseUrl === undefined && dataDir === IN_MEMORY
  // A secret generated in memory would be unknown to everyone else: no one could sign a token.
  if (useLocalSecret && inMemory) {
    throw new Failure(
      'BAD_SETTING',
      `DATA_DIR=${IN_MEMORY} keeps nothing on disk, so there is no local secret: set AUTH_JWT_SECRET (32+ bytes) or AUTH_JWKS_URL`,
    )
  }
  return {
    host: nonEmpty(env, 'HOST') ?? '0.0.0.0',
    port: integer(env, 'PORT', 3000, 0, 65535),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    logFormat: oneOf(env, 'LOG_FORMAT', LOG_FORMATS, 'auto'),
    logSubject: oneOf(env, 'LOG_SUBJECT', ['true', 'false'], 'false') === 'true',
    requestTimeoutMs: integer(env, 'REQUEST_TIMEOUT_MS', 15_000, 100, 600_000),
    dataDir,
    storage:
      databaseUrl === undefined
        ? inMemory
          ? { kind: 'memory' }
          : { kind: 'embedded', dataDir }
        : {
            kind: 'postgres',
            url: postgresUrl(databaseUrl, nonEmpty(env, 'PGTARGETSESSIONATTRS')),
            poolSize: integer(env, 'DATABASE_POOL_SIZE', 10, 1, 1000),
            statementTimeoutMs: integer(env, 'DATABASE_STATEMENT_TIMEOUT_MS', 10_000, 100, 600_000),
          },
    auth: {
      secret,
      jwksUrl,
      jwksCooldownMs: integer(env, 'AUTH_JWKS_COOLDOWN_MS', 30_000, 0, 3_600_000),
      jwksCacheMaxAgeMs: integer(env, 'AUTH_JWKS_CACHE_MAX_AGE_MS', 600_000, 1000, 86_400_000),
      issuer: nonEmpty(env, 'AUTH_ISSUER'),
      audience: nonEmpty(env, 'AUTH_AUDIENCE'),
      useLocalSecret,
    },
    changeStreamsPerOwner: integer(env, 'CHANGE_STREAMS_PER_OWNER', 100, 1, 100_000),
    feed: feedConfig(env),
    readReplicas: readReplicasConfig(env, databaseUrl !== undefined),
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

function readReplicasConfig(env: Env, onPostgres: boolean): ReadReplicasConfig | undefined {
  const waitMs = integer(env, 'READ_WAIT_MS', 500, 0, 10_000)
  const maxLagMs = integer(env, 'READ_MAX_LAG_MS', 10_000, 100, 3_600_000)
  const text = nonEmpty(env, 'DATABASE_READ_URLS')
  if (text === undefined) return undefined
  if (!onPostgres) {
    throw new Failure(
      'BAD_SETTING',
      'DATABASE_READ_URLS names replicas of DATABASE_URL, which is unset: the embedded store has no replicas',
    )
  }
  const urls = text.split(',').map((url) => url.trim())
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

function feedConfig(env: Env): FeedConfig | undefined {
  const urls = nonEmpty(env, 'EVENTS_NATS_URL')
  if (urls === undefined) return undefined
  const servers = urls.split(',').map((url) => url.trim())
  if (!servers.every(isNatsUrl)) {
    throw new Failure(
      'BAD_SETTING',
      `EVENTS_NATS_URL must be nats:// or tls:// URLs with host and port, comma-separated, got "${urls}"`,
    )
  }
  const stream = nonEmpty(env, 'EVENTS_NATS_STREAM') ?? 'PLANT_STORE'
  if (!/^[^\s.*>/\\]+$/.test(stream)) {
    throw new Failure(
      'BAD_SETTING',
      `EVENTS_NATS_STREAM must be a stream name without spaces, ".", "*", ">" or slashes`,
    )
  }
  const subjectPrefix = nonEmpty(env, 'EVENTS_NATS_SUBJECT_PREFIX') ?? 'plant-store'
  if (!subjectPrefix.split('.').every((token) => /^[^\s*>]+$/.test(token))) {
    throw new Failure(
      'BAD_SETTING',
      'EVENTS_NATS_SUBJECT_PREFIX must be subject tokens joined by ".", without spaces or wildcards',
    )
  }
  return {
    servers,
    stream,
    subjectPrefix,
    source: nonEmpty(env, 'EVENTS_SOURCE') ?? 'plant-store',
    replicas: integer(env, 'EVENTS_NATS_REPLICAS', 1, 1, 5),
  }
}

function isNatsUrl(text: string): boolean {
  const url = URL.parse(text)
  if (url === null) return false
  return (url.protocol === 'nats:' || url.protocol === 'tls:') && url.hostname !== '' && url.port !== ''
}

function oneOf<T extends string>(env: Env, name: string, values: T[], fallback: T): T {
  const value = (nonEmpty(env, name) ?? fallback) as T
  if (!values.includes(value)) throw new Failure('BAD_SETTING', `${name} must be one of ${values.join(', ')}`)
  return value
}

function nonEmpty(env: Env, name: string): string | undefined {
  const value = env[name]?.trim()
  return value === undefined || value === '' ? undefined : value
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const text = nonEmpty(env, name)
  if (text === undefined) return fallback
  const value = Number(text)
  if (!/^\d+$/.test(text) || value < min || value > max) {
    throw new Failure('BAD_SETTING', `${name} must be an integer from ${min} to ${max}, got "${text}"`)
  }
  return value
}
