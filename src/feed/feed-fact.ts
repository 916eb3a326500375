import { eq } from 'drizzle-orm'
import { storeFacts } from '../log/schema.ts'
import type { Executor } from '../store/database.ts'

const FEED = 'feed'

// CONTRACT §12: a store that has a feed records it, so that an erasure run without the feed's
// settings refuses rather than leave the owner's messages in the stream. Written by every start
// of a feed: the latest stream named wins.
export async function recordFeed(db: Executor, stream: string): Promise<void> {
  await db
    .insert(storeFacts)
    .values({ name: FEED, value: stream })
    .onConflictDoUpdate({ target: storeFacts.name, set: { value: stream } })
}

// The stream the store's log has been published to; undefined when it never had a feed.
export async function recordedFeed(db: Executor): Promise<string | undefined> {
  const [row] = await db.select({ value: storeFacts.value }).from(storeFacts).where(eq(storeFacts.name, FEED))
  return row?.value
}
