// The entity tag of a listing (docs/api.md). A listing's body and headers are a function of the
// caller's rows and the request's `limit` and `after`; its tag is a function of what names them:
// - the owner's head (the position of their latest plant). One owner's creates commit in position
//   order (event-log/append.ts), so a new plant always moves it and no plant ever appears below it;
//   another owner's creates never touch it. An erasure would delete the owner's rows, bringing it
//   back to 0, and a later plant of the same `sub` gets a position above any it had: a tag never
//   comes back for other rows.
// - the owner's generation: a rebuild writes the same rows for the same log, so it keeps the tag,
//   but one that changes an owner's rows (a repaired drift, a new reading of old events) can leave
//   the head where it was, so it bumps that owner's generation (projection/rebuild-projection.ts).
// - `limit` and `after`, so that a tag of one page never matches another page of the same state.
// The same state gives the same bytes (a streamed listing stops at the head it reported), so the
// tag is strong (RFC 9110 §8.8.1).
export type ListingVersion = { position: bigint; generation: bigint }

export function listingTag(
  { position, generation }: ListingVersion,
  limit: number | undefined,
  after: bigint | undefined,
): string {
  return `"${position}.${generation}.${limit ?? 'all'}.${after ?? 0}"`
}
