import type { Static } from '@sinclair/typebox'
import type { ChangeEvent } from './changes/change-routes.ts'
import type { OwnerErasedEvent, PlantCreatedEvent } from './feed/feed-schemas.ts'
import type { ErrorBody } from './http/error-body.ts'
import type { NewPlant, PlantView } from './plants/schemas.ts'

// The shapes a user of the API or the feed writes code against, each the static type of the
// schema the service validates or publishes with.

/** A plant as `GET /plants` and `POST /plants` answer it: `tag` is left out when it has none. */
export type PlantAnswer = Static<typeof PlantView>

/**
 * The body of `POST /plants`: `id` an int64 (a number up to 2^53, or a bigint), `name` 1–1024
 * characters, `tag` 0–1024 characters, or null or left out for none.
 */
export type NewPlantBody = Static<typeof NewPlant>

/** The body of every error answer: the HTTP status and a message for people. */
export type ErrorAnswer = Static<typeof ErrorBody>

/**
 * One event of `GET /plants/changes` as the typed client yields it: `id`, the event's position in
 * the log (send it back as `after`, or as `Plant-Store-Position`), and `data`, the plant; ids are
 * decimal strings, exact past 2^53.
 */
export type PlantChangeEvent = Static<typeof ChangeEvent>

/** A feed message on `<prefix>.events.PlantCreated.<pseudonym>`: a CloudEvent; ids are decimal strings. */
export type PlantCreatedMessage = PlantCreatedEvent

/** A feed message on `<prefix>.events.OwnerErased`: drop what was derived from that owner's plants. */
export type OwnerErasedMessage = OwnerErasedEvent

/** Any message of the feed, told apart by `type`. */
export type FeedMessage = PlantCreatedMessage | OwnerErasedMessage
