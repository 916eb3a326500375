import { TARGET_SESSION_ATTRS } from '../database/target-session-attrs.ts'
import {
  address,
  decimal,
  folder,
  integer,
  keys,
  keysFile,
  keyValuePairs,
  natsUrls,
  oneOf,
  origins,
  otlpVariable,
  postgresUrl,
  postgresUrls,
  type Rule,
  secret,
  streamName,
  subjectPrefix,
  text,
  webUrl,
} from './setting-rules.ts'

// Every environment variable the service reads, once: its default (absent: unset), what it means,
// and which part of the service reads it (a command's help lists the variables of the parts it
// uses). loadConfig takes its defaults from here, the start warns about any variable near one of
// these names, the CLI's help prints them, and the table in docs/configuration.md shows exactly
// these rows (test/docs/readme-configuration.unit.test.ts). Each row's rule is its type and range:
// every variable set is checked by it at a start, whether the part that reads it runs or not
// (test/config/every-setting.e2e.test.ts). A new variable is one more row.
// A name ending in `*` stands for a family the service hands on whole (standard variables of a
// library it uses): any name with that prefix is known.
export type Setting = { fallback?: string; meaning: string; part: Part; rule: Rule<unknown> }

// `tokens`: what signs and checks a token (the server and `token issue`); `auth`: the rest of
// the checking, which only the server does.
export type Part = 'server' | 'storage' | 'tokens' | 'auth' | 'log' | 'feed' | 'replicas' | 'tracing'

// OpenTelemetry's samplers, by the names its specification gives them.
export const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const
export type Sampler = (typeof SAMPLERS)[number]

export const SETTINGS = {
  HOST: { fallback: '0.0.0.0', meaning: 'interface to listen on', part: 'server', rule: address },
  PORT: {
    fallback: '3000',
    meaning: 'port to listen on (`0` picks a free one)',
    part: 'server',
    rule: integer(0, 65535),
  },
  DATABASE_URL: {
    meaning: '`postgres://…` to use PostgreSQL; unset means the embedded database',
    part: 'storage',
    rule: postgresUrl,
  },
  DATA_DIR: {
    fallback: './data',
    meaning:
      "the embedded PostgreSQL server's data and the generated secret; one service at a time (CLI commands work beside it). `memory:` puts the store on a throwaway server in a temporary folder instead: gone when the process ends (for test suites; needs `AUTH_JWT_SECRET` or `AUTH_JWKS_URL`)",
    part: 'storage',
    rule: folder,
  },
  DATABASE_POOL_SIZE: {
    fallback: '10',
    meaning: "PostgreSQL connections per process (the embedded server's pool is 5: see The embedded default)",
    part: 'storage',
    rule: integer(1, 1000),
  },
  DATABASE_STATEMENT_TIMEOUT_MS: {
    fallback: '10000',
    meaning:
      'PostgreSQL statement timeout, so no request hangs (with `prepare=false` in `DATABASE_URL`, as behind a pooler, the service cancels the statement itself)',
    part: 'storage',
    rule: integer(100, 600_000),
  },
  PGTARGETSESSIONATTRS: {
    meaning:
      "libpq's default for `target_session_attrs` when `DATABASE_URL` has none (`read-write`, `primary`, `read-only`, `standby`, `prefer-standby`, `any`; see Failover)",
    part: 'storage',
    rule: oneOf(TARGET_SESSION_ATTRS),
  },
  KEY_ENCRYPTION_KEYS: {
    meaning:
      "key-encryption keys that wrap the owners' keys: base64 of 32 bytes each (`openssl rand -base64 32`), comma-separated; the first wraps, all unwrap. Required with `DATABASE_URL`; unset on the embedded store means one generated into `DATA_DIR` (see Erasure and docs/keys.md)",
    part: 'storage',
    rule: keys,
  },
  KEY_ENCRYPTION_KEYS_FILE: {
    meaning:
      'a file holding `KEY_ENCRYPTION_KEYS` (one key a line or comma-separated), instead of the variable',
    part: 'storage',
    rule: keysFile,
  },
  AUTH_JWT_SECRET: { meaning: 'HS256 secret, at least 32 bytes', part: 'tokens', rule: secret(32) },
  AUTH_JWKS_URL: {
    meaning: 'JWKS URL of an identity provider (RS256, ES256, EdDSA)',
    part: 'tokens',
    rule: webUrl,
  },
  AUTH_ISSUER: { meaning: 'required `iss`, when set', part: 'auth', rule: text },
  AUTH_AUDIENCE: { meaning: 'required `aud`, when set', part: 'auth', rule: text },
  AUTH_JWKS_CACHE_MAX_AGE_MS: {
    fallback: '600000',
    meaning: 'how long a fetched key set is used before it is fetched again',
    part: 'auth',
    rule: integer(1000, 86_400_000),
  },
  AUTH_JWKS_COOLDOWN_MS: {
    fallback: '30000',
    meaning: 'least time between two fetches of the key set (unknown `kid`s, failures)',
    part: 'auth',
    rule: integer(0, 3_600_000),
  },
  REQUEST_TIMEOUT_MS: {
    fallback: '15000',
    meaning:
      'longest wait for a response; past it the answer is `503` with `Retry-After` (a request body that stops arriving gets `408` before that)',
    part: 'server',
    rule: integer(100, 600_000),
  },
  CHANGE_STREAMS_PER_OWNER: {
    fallback: '100',
    meaning:
      'the most live change streams one caller holds open on an instance (1–100000); one more is `429` with `Retry-After`',
    part: 'server',
    rule: integer(1, 100_000),
  },
  CORS_ORIGINS: {
    meaning:
      'origins whose pages may call the API from a browser: `https://app.example.com` origins, comma-separated, or `*` for any; unset means none (see Calling it from a browser)',
    part: 'server',
    rule: origins,
  },
  LOG_LEVEL: {
    fallback: 'info',
    meaning: '`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`',
    part: 'log',
    rule: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
  },
  LOG_FORMAT: {
    fallback: 'auto',
    meaning: '`json` (one JSON object per line), `pretty` (for people), `auto` (pretty on a terminal)',
    part: 'log',
    rule: oneOf(['auto', 'json', 'pretty']),
  },
  LOG_SUBJECT: {
    fallback: 'false',
    meaning:
      "`true` adds the caller's `subject` to each request line; an erasure cannot take it back from your logs (see Erasure)",
    part: 'log',
    rule: oneOf(['true', 'false']),
  },
  EVENTS_NATS_URL: {
    meaning: 'turns the event feed on: `nats://` or `tls://` URLs with host and port, comma-separated',
    part: 'feed',
    rule: natsUrls,
  },
  EVENTS_NATS_STREAM: {
    fallback: 'PLANT_STORE',
    meaning: 'the JetStream stream of the feed; created when missing',
    part: 'feed',
    rule: streamName,
  },
  EVENTS_NATS_SUBJECT_PREFIX: {
    fallback: 'plant-store',
    meaning:
      "events go to `<prefix>.events.<type>` (PlantCreated with one more token: the owner's pseudonym)",
    part: 'feed',
    rule: subjectPrefix,
  },
  EVENTS_SOURCE: {
    fallback: 'plant-store',
    meaning: "the CloudEvents `source` of the feed's messages",
    part: 'feed',
    rule: text,
  },
  EVENTS_NATS_REPLICAS: {
    fallback: '1',
    meaning:
      'copies a NATS cluster keeps of the stream, when the service creates it (1–5; `3` on a three-node cluster)',
    part: 'feed',
    rule: integer(1, 5),
  },
  DATABASE_READ_URLS: {
    meaning:
      '`postgres://` URLs of streaming replicas of `DATABASE_URL`, comma-separated, one server each: listings and change streams read from them (see Scaling out). Refused on the embedded store',
    part: 'replicas',
    rule: postgresUrls,
  },
  READ_WAIT_MS: {
    fallback: '500',
    meaning:
      "how long (0–10000) a listing that sends `Plant-Store-Position` waits for a replica to show it before it reads from the primary; a change stream's read waits as long for a replica to replay where the stream joins the log",
    part: 'replicas',
    rule: integer(0, 10_000),
  },
  READ_MAX_LAG_MS: {
    fallback: '10000',
    meaning: 'a replica further behind than this serves no listing until it catches up',
    part: 'replicas',
    rule: integer(100, 3_600_000),
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    meaning:
      'turns tracing on: the OTLP/HTTP receiver (`http://collector:4318`); spans go to its `/v1/traces` as JSON (see docs/tracing.md)',
    part: 'tracing',
    rule: webUrl,
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {
    meaning: 'turns tracing on too: the full URL spans are posted to, taking precedence over the one above',
    part: 'tracing',
    rule: webUrl,
  },
  'OTEL_EXPORTER_OTLP_*': {
    meaning:
      "the OTLP exporter's other standard variables (`…_HEADERS`, `…_TIMEOUT`, `…_COMPRESSION`, certificates), read by the exporter itself; `…_PROTOCOL` is not read: spans always go as JSON",
    part: 'tracing',
    rule: otlpVariable,
  },
  OTEL_SERVICE_NAME: {
    fallback: 'plant-store',
    meaning: "the spans' `service.name`, before a `service.name` in `OTEL_RESOURCE_ATTRIBUTES`",
    part: 'tracing',
    rule: text,
  },
  OTEL_RESOURCE_ATTRIBUTES: {
    meaning:
      "more attributes of the spans' resource, `key=value` pairs separated by commas (`deployment.environment.name=prod,service.namespace=shop`), values percent-encoded",
    part: 'tracing',
    rule: keyValuePairs,
  },
  OTEL_TRACES_SAMPLER: {
    fallback: 'parentbased_always_on',
    meaning:
      '`always_on`, `always_off`, `traceidratio`, `parentbased_always_on`, `parentbased_always_off` or `parentbased_traceidratio`',
    part: 'tracing',
    rule: oneOf(SAMPLERS),
  },
  OTEL_TRACES_SAMPLER_ARG: {
    fallback: '1',
    meaning: 'the ratio (0–1) of the `traceidratio` samplers',
    part: 'tracing',
    rule: decimal(0, 1),
  },
  OTEL_SDK_DISABLED: {
    fallback: 'false',
    meaning: '`true` keeps tracing off whatever the endpoint',
    part: 'tracing',
    rule: oneOf(['true', 'false'], { anyCase: true }),
  },
} as const satisfies Record<string, Setting>

export type SettingName = keyof typeof SETTINGS

// The table as read for its names alone.
export type SettingsTable = Readonly<Record<string, object>>
