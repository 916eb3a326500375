import { eq } from 'drizzle-orm'
import type { FeedConfig } from '../config/config.ts'
import type { Executor } from '../database/database.ts'
import { storeFacts } from '../event-log/schema.ts'
import { Failure } from '../shared/errors.ts'
import { feedFilter } from './cloud-event.ts'

const FEED = 'feed'

// The feed a store's log has been published to. A store written by an earlier version recorded
// the stream alone: `subjectPrefix` is undefined there until a service starts its feed again.
export type RecordedFeed = { stream: string; subjectPrefix?: string }

// Erasure (docs/erasure.md): a store that has a feed records it, so that an erasure follows that feed and only
// that. Written by every start of a feed: the latest named wins.
export async function recordFeed(db: Executor, { stream, subjectPrefix }: RecordedFeed): Promise<void> {
  const value = JSON.stringify({ stream, subjectPrefix })
  await db
    .insert(storeFacts)
    .values({ name: FEED, value })
    .onConflictDoUpdate({ target: storeFacts.name, set: { value } })
}

// The feed the store's log has been published to; undefined when it never had one.
export async function recordedFeed(db: Executor): Promise<RecordedFeed | undefined> {
  const [row] = await db.select({ value: storeFacts.value }).from(storeFacts).where(eq(storeFacts.name, FEED))
  if (row === undefined) return undefined
  return parseRecord(row.value) ?? { stream: row.value }
}

function parseRecord(value: string): RecordedFeed | undefined {
  try {
    const parsed = JSON.parse(value) as Partial<RecordedFeed> | null
    return typeof parsed?.stream === 'string' ? (parsed as RecordedFeed) : undefined
  } catch {
    return undefined
  }
}

// The feed an erasure works on: the recorded one, reached with the configured servers. No NATS work
// at all for a store that never had a feed; a refusal, before anything changes, when the settings
// name no feed or another one than the store's (the owner would stay in the real stream for good).
export function feedToErase(
  recorded: RecordedFeed | undefined,
  configured: FeedConfig | undefined,
): FeedConfig | undefined {
  if (recorded === undefined) return undefined
  const refused = 'owners erase refused, nothing was changed: this store publishes its log to'
  const theirs = describe(recorded)
  const settings = 'EVENTS_NATS_STREAM, EVENTS_NATS_SUBJECT_PREFIX'
  if (configured === undefined) {
    throw new Failure(
      'BAD_SETTING',
      `${refused} ${theirs}; set EVENTS_NATS_URL (and ${settings}) as the service has them, so that the owner leaves the stream too`,
    )
  }
  const prefix = recorded.subjectPrefix ?? configured.subjectPrefix
  if (configured.stream !== recorded.stream || configured.subjectPrefix !== prefix) {
    throw new Failure(
      'BAD_SETTING',
      `${refused} ${theirs}, not ${describe(configured)} (${settings}); set them as the service has them`,
    )
  }
  return configured
}

function describe({ stream, subjectPrefix }: RecordedFeed): string {
  const subjects = subjectPrefix === undefined ? '' : ` on "${feedFilter(subjectPrefix)}"`
  return `the NATS stream "${stream}"${subjects}`
}
