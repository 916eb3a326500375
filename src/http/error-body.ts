import { type Static, Type } from '@sinclair/typebox'

// The body of every error the service answers (docs/api.md): the status and a message for people.
export const ErrorBody = Type.Object({
  error: Type.Integer({ format: 'int32', description: 'The HTTP status code' }),
  message: Type.String({ minLength: 1 }),
})
export type ErrorBody = Static<typeof ErrorBody>
