import { readJsonBody } from '../../src/http/json-body.ts'
import { NewPlant, PlantView } from '../../src/plants/schemas.ts'
import { isFailure } from '../../src/shared/errors.ts'

// The checks of the service's POST /plants (its JSON body reader, its schema and its answer's), for
// the peers measured beside it: they differ from it in what they do with a plant, not in these.
export const createChecks = {
  parse: ({ request }: { request: Request }) => readJsonBody(request),
  transform: ({ body }: { body: unknown }) => {
    if (isFailure(body)) throw body
  },
  body: NewPlant,
  response: { 200: PlantView },
}
