// Every environment variable the service reads, once: its default (absent: unset), what it means,
// and which part of the service reads it (a command's help lists the variables of the parts it
// uses). loadConfig takes its defaults from here, the start warns about any variable near one of
// these names, the CLI's help prints them, and the table in docs/configuration.md shows exactly
// these rows (test/docs/readme-configuration.unit.test.ts). A new variable is one more row.
// A name ending in `*` stands for a family the service hands on whole (standard variables of a
// library it uses): any name with that prefix is known.
export type Setting = { fallback?: string; meaning: string; part: Part }

// `tokens`: what signs and checks a token (the server and `token issue`); `auth`: the rest of
// the checking, which only the server does.
export type Part = 'server' | 'storage' | 'tokens' | 'auth' | 'log' | 'feed' | 'replicas' | 'tracing'

export const SETTINGS = {
  HOST: { fallback: '0.0.0.0', meaning: 'interface to listen on', part: 'server' },
  PORT: { fallback: '3000', meaning: 'port to listen on (`0` picks a free one)', part: 'server' },
  DATABASE_URL: {
    meaning: '`postgres://…` to use PostgreSQL; unset means the embedded database',
    part: 'storage',
  },
  DATA_DIR: {
    fallback: './data',
    meaning:
      "the embedded PostgreSQL server's data and the generated secret; one service at a time (CLI commands work beside it). `memory:` puts the store on a throwaway server in a temporary folder instead: gone when the process ends (for test suites; needs `AUTH_JWT_SECRET` or `AUTH_JWKS_URL`)",
    part: 'storage',
  },
  DATABASE_POOL_SIZE: {
    fallback: '10',
    meaning: "PostgreSQL connections per process (the embedded server's pool is 5: see The embedded default)",
    part: 'storage',
  },
  DATABASE_STATEMENT_TIMEOUT_MS: {
    fallback: '10000',
    meaning:
      'PostgreSQL statement timeout, so no request hangs (with `prepare=false` in `DATABASE_URL`, as behind a pooler, the service cancels the statement itself)',
    part: 'storage',
  },
  PGTARGETSESSIONATTRS: {
    meaning:
      "libpq's default for `target_session_attrs` when `DATABASE_URL` has none (`read-write`, `primary`, `read-only`, `standby`, `prefer-standby`, `any`; see Failover)",
    part: 'storage',
  },
  KEY_ENCRYPTION_KEYS: {
    meaning:
      "key-encryption keys that wrap the owners' keys: base64 of 32 bytes each (`openssl rand -base64 32`), comma-separated; the first wraps, all unwrap. Required with `DATABASE_URL`; unset on the embedded store means one generated into `DATA_DIR` (see Erasure and docs/keys.md)",
    part: 'storage',
  },
  KEY_ENCRYPTION_KEYS_FILE: {
    meaning:
      'a file holding `KEY_ENCRYPTION_KEYS` (one key a line or comma-separated), instead of the variable',
    part: 'storage',
  },
  AUTH_JWT_SECRET: { meaning: 'HS256 secret, at least 32 bytes', part: 'tokens' },
  AUTH_JWKS_URL: { meaning: 'JWKS URL of an identity provider (RS256, ES256, EdDSA)', part: 'tokens' },
  AUTH_ISSUER: { meaning: 'required `iss`, when set', part: 'auth' },
  AUTH_AUDIENCE: { meaning: 'required `aud`, when set', part: 'auth' },
  AUTH_JWKS_CACHE_MAX_AGE_MS: {
    fallback: '600000',
    meaning: 'how long a fetched key set is used before it is fetched again',
    part: 'auth',
  },
  AUTH_JWKS_COOLDOWN_MS: {
    fallback: '30000',
    meaning: 'least time between two fetches of the key set (unknown `kid`s, failures)',
    part: 'auth',
  },
  REQUEST_TIMEOUT_MS: {
    fallback: '15000',
    meaning:
      'longest wait for a response; past it the answer is `503` with `Retry-After` (a request body that stops arriving gets `408` before that)',
    part: 'server',
  },
  CHANGE_STREAMS_PER_OWNER: {
    fallback: '100',
    meaning:
      'the most live change streams one caller holds open on an instance (1–100000); one more is `429` with `Retry-After`',
    part: 'server',
  },
  CORS_ORIGINS: {
    meaning:
      'origins whose pages may call the API from a browser: `https://app.example.com` origins, comma-separated, or `*` for any; unset means none (see Calling it from a browser)',
    part: 'server',
  },
  LOG_LEVEL: {
    fallback: 'info',
    meaning: '`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`',
    part: 'log',
  },
  LOG_FORMAT: {
    fallback: 'auto',
    meaning: '`json` (one JSON object per line), `pretty` (for people), `auto` (pretty on a terminal)',
    part: 'log',
  },
  LOG_SUBJECT: {
    fallback: 'false',
    meaning:
      "`true` adds the caller's `subject` to each request line; an erasure cannot take it back from your logs (see Erasure)",
    part: 'log',
  },
  EVENTS_NATS_URL: {
    meaning: 'turns the event feed on: `nats://` or `tls://` URLs with host and port, comma-separated',
    part: 'feed',
  },
  EVENTS_NATS_STREAM: {
    fallback: 'PLANT_STORE',
    meaning: 'the JetStream stream of the feed; created when missing',
    part: 'feed',
  },
  EVENTS_NATS_SUBJECT_PREFIX: {
    fallback: 'plant-store',
    meaning:
      "events go to `<prefix>.events.<type>` (PlantCreated with one more token: the owner's pseudonym)",
    part: 'feed',
  },
  EVENTS_SOURCE: {
    fallback: 'plant-store',
    meaning: "the CloudEvents `source` of the feed's messages",
    part: 'feed',
  },
  EVENTS_NATS_REPLICAS: {
    fallback: '1',
    meaning:
      'copies a NATS cluster keeps of the stream, when the service creates it (1–5; `3` on a three-node cluster)',
    part: 'feed',
  },
  DATABASE_READ_URLS: {
    meaning:
      '`postgres://` URLs of streaming replicas of `DATABASE_URL`, comma-separated, one server each: listings and change streams read from them (see Scaling out). Refused on the embedded store',
    part: 'replicas',
  },
  READ_WAIT_MS: {
    fallback: '500',
    meaning:
      "how long (0–10000) a listing that sends `Plant-Store-Position` waits for a replica to show it before it reads from the primary; a change stream's read waits as long for a replica to replay where the stream joins the log",
    part: 'replicas',
  },
  READ_MAX_LAG_MS: {
    fallback: '10000',
    meaning: 'a replica further behind than this serves no listing until it catches up',
    part: 'replicas',
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    meaning:
      'turns tracing on: the OTLP/HTTP receiver (`http://collector:4318`); spans go to its `/v1/traces` as JSON (see docs/tracing.md)',
    part: 'tracing',
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {
    meaning: 'turns tracing on too: the full URL spans are posted to, taking precedence over the one above',
    part: 'tracing',
  },
  'OTEL_EXPORTER_OTLP_*': {
    meaning:
      "the OTLP exporter's other standard variables (`…_HEADERS`, `…_TIMEOUT`, `…_COMPRESSION`, certificates), read by the exporter itself; `…_PROTOCOL` is not read: spans always go as JSON",
    part: 'tracing',
  },
  OTEL_SERVICE_NAME: {
    fallback: 'plant-store',
    meaning: "the spans' `service.name`, before a `service.name` in `OTEL_RESOURCE_ATTRIBUTES`",
    part: 'tracing',
  },
  OTEL_RESOURCE_ATTRIBUTES: {
    meaning:
      "more attributes of the spans' resource, `key=value` pairs separated by commas (`deployment.environment.name=prod,service.namespace=shop`), values percent-encoded",
    part: 'tracing',
  },
  OTEL_TRACES_SAMPLER: {
    fallback: 'parentbased_always_on',
    meaning:
      '`always_on`, `always_off`, `traceidratio`, `parentbased_always_on`, `parentbased_always_off` or `parentbased_traceidratio`',
    part: 'tracing',
  },
  OTEL_TRACES_SAMPLER_ARG: {
    fallback: '1',
    meaning: 'the ratio (0–1) of the `traceidratio` samplers',
    part: 'tracing',
  },
  OTEL_SDK_DISABLED: {
    fallback: 'false',
    meaning: '`true` keeps tracing off whatever the endpoint',
    part: 'tracing',
  },
} as const satisfies Record<string, Setting>

export type SettingName = keyof typeof SETTINGS

export type SettingsTable = Readonly<Record<string, Setting>>
