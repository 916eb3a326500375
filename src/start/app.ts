import { Elysia } from 'elysia'
import { Registry } from 'prom-client'
import type { TokenVerifier } from '../auth/token-verifier.ts'
import { changeRoutes } from '../changes/change-routes.ts'
import type { Changes } from '../changes/changes-service.ts'
import type { CorsConfig } from '../config/config.ts'
import type { Keyring } from '../crypto/keyring.ts'
import type { Database } from '../database/database.ts'
import { buildAsyncApiDocument } from '../feed/asyncapi-document.ts'
import { cors } from '../http/cors.ts'
import { ErrorBody } from '../http/error-body.ts'
import { errorHandler } from '../http/error-handler.ts'
import { requestIds } from '../http/request-id.ts'
import { registerSchemaKinds } from '../http/schema-kinds.ts'
import { healthRoutes } from '../observability/health.ts'
import { createMetrics } from '../observability/metrics.ts'
import { metricsRoute } from '../observability/metrics-route.ts'
import { logRequest } from '../observability/request-log.ts'
import { requestObservation } from '../observability/request-observation.ts'
import { docsRoutes } from '../openapi/docs-routes.ts'
import type { DocumentedRoute } from '../openapi/document.ts'
import type { ReadPlants } from '../plants/listing-source.ts'
import { plantRoutes } from '../plants/plant-routes.ts'
import { NewPlant, PlantView } from '../plants/schemas.ts'
import type { Logger } from '../shared/logger.ts'
import { requestSpans } from '../tracing/request-spans.ts'
import type { Tracing } from '../tracing/tracing.ts'

export type AppDeps = {
  db: Database
  // The service's keys (crypto/keyring.ts): creates seal under them.
  keyring: Keyring
  verifyToken: TokenVerifier
  logger: Logger
  now?: () => Date
  generateRequestId?: () => string
  // Where this app's metrics live; a fresh registry per app unless the caller shares one.
  registry?: Registry
  // A monotonic clock in milliseconds, for request durations.
  clock?: () => number
  // Called after a create appended an event.
  onAppended?: () => void
  // Where listings are read; the primary (`db`) unless given (read replicas).
  readPlants?: ReadPlants
  // The live change streams (GET /plants/changes); without them that route answers 503.
  changes?: Changes
  // Batches of creates in the database at once (see plants/create-plant.ts).
  batchesInFlight?: number
  // Statements of grouped listings in the database at once (see plants/page-groups.ts).
  readsInFlight?: number
  // How long a request body may take to arrive before it is answered 408 (see http/json-body.ts).
  bodyTimeoutMs?: number
  // The origins whose pages may call the API from a browser; none unless given.
  cors?: CorsConfig
  // Request lines name the caller's subject (LOG_SUBJECT=true); they do not by default.
  logSubject?: boolean
  // Spans for requests and creates; none unless given (OTEL_* unset).
  tracing?: Tracing
}

export function createApp({
  db,
  keyring,
  verifyToken,
  logger,
  now = () => new Date(),
  generateRequestId,
  registry = new Registry(),
  clock,
  onAppended,
  readPlants,
  changes,
  batchesInFlight,
  readsInFlight,
  bodyTimeoutMs,
  cors: corsPolicy,
  logSubject = false,
  tracing,
}: AppDeps) {
  registerSchemaKinds()
  // Elysia finds the path at index 11 of the URL unless told otherwise, which assumes a host of
  // four characters or more (`Host: api` would 404 everywhere); its dynamic router, which
  // ELYSIA_AOT=false would pick, always does. Routing must not depend on the Host (docs/api.md):
  // test/http/host-header.e2e.test.ts tries both.
  const app = new Elysia({ aot: true, handler: { standardHostname: false } })
  const allowedMethods = (path: string) => methodsServing(app, path)
  const metrics = createMetrics(registry)
  const ids = requestIds(generateRequestId)
  const spans = tracing && requestSpans(tracing)
  return app
    .use(spans?.plugin ?? new Elysia({ name: 'request-spans' }))
    .use(errorHandler({ logger, requestIds: ids, allowedMethods }))
    .use(cors({ policy: corsPolicy, allowedMethods }))
    .use(
      requestObservation({
        requestIdOf: ids.of,
        clock,
        onStarted: metrics.requestStarted,
        onFinished: (record) => {
          metrics.recordRequest(record)
          logRequest(logger, record, logSubject)
        },
      }),
    )
    .use(healthRoutes({ db }))
    .use(metricsRoute({ db, metrics }))
    .use(
      docsRoutes(() => app.routes as readonly DocumentedRoute[], DOCUMENTED_SCHEMAS, buildAsyncApiDocument()),
    )
    .use(
      plantRoutes({
        db,
        keyring,
        verifyToken,
        requestIds: ids,
        now,
        onAppended: () => {
          metrics.eventAppended()
          onAppended?.()
        },
        readPlants,
        batchesInFlight,
        readsInFlight,
        bodyTimeoutMs,
        tracing: spans && { tracing, traceparentOf: spans.traceparentOf },
      }),
    )
    .use(changeRoutes({ verifyToken, changes }))
}

export type App = ReturnType<typeof createApp>

// The shapes the OpenAPI document names, as clients' generators see them.
const DOCUMENTED_SCHEMAS = { Plant: PlantView, NewPlant, Error: ErrorBody }

// Elysia answers HEAD wherever a GET route is (RFC 9110 §9.3.2), so Allow lists it there too.
function methodsServing(app: Elysia, path: string): string[] {
  const methods = new Set(app.routes.filter((route) => route.path === path).map((route) => route.method))
  if (methods.has('GET')) methods.add('HEAD')
  return [...methods].sort()
}
