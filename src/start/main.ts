import process from 'node:process'
import { type Config, loadConfig } from '../config/config.ts'
import { summarizeConfig } from '../config/summary.ts'
import { findUnknownSettings } from '../config/unknown-settings.ts'
import { unreachableDatabase } from '../shared/database-error.ts'
import { isFailure } from '../shared/errors.ts'
import { createLogger, type Logger } from '../shared/logger.ts'
import { type LogOutput, stdoutLog } from '../shared/logger-output.ts'
import { turnOffCoreDumps } from './core-dumps.ts'
import { checkListenable, serve } from './serve.ts'
import { startServiceParts } from './service-parts.ts'
import { startFailureLine } from './start-failure.ts'
import { stopOnSignals } from './stop-on-signal.ts'

// How long an exit waits for stdout to take the lines the log still holds: a log collector that
// stalled or went away does not keep a stopped service alive.
const LOG_FLUSH_MS = 1_000

// The service's start: the configuration, the log, the parts, the listener, and the stop.
async function main(output: LogOutput): Promise<void> {
  const coreDumps = await turnOffCoreDumps()
  const config = readConfig(process.env)
  const logger = createLogger(config.logLevel, { pretty: prettyLog(config), write: output.write })
  if (coreDumps) logger.warn(coreDumps)
  const exit = exitAfterLog(output)
  for (const { name, nearest, message } of findUnknownSettings(process.env))
    logger.warn({ variable: name, nearest }, message)
  await checkListenable(config.host, config.port)
  const parts = await startServiceParts(config, logger, output.dropped)
  stopWhenStoreLost(parts.storage.lost, logger, exit)
  let server: ReturnType<typeof serve>
  try {
    server = serve(parts.app, {
      hostname: config.host,
      port: config.port,
      requestTimeoutMs: config.requestTimeoutMs,
      logger,
      cors: config.cors,
    })
  } catch (error) {
    // A port in use or a bad HOST: the embedded server stops with the service, cleanly.
    await parts.changes.close()
    await parts.stop()
    throw error
  }
  sayListening(config, server.port, logger)
  stopOnSignals({ server, parts, logger, requestTimeoutMs: config.requestTimeoutMs, exit })
}

// A setting that stops the start may be one of the unknown ones misspelt: they are said first.
// The server checks tokens and, on PostgreSQL, needs key-encryption keys.
function readConfig(env: NodeJS.ProcessEnv): Config {
  try {
    return loadConfig(env, ['token keys', 'key-encryption keys'])
  } catch (error) {
    for (const { message } of findUnknownSettings(env)) console.error(message)
    throw error
  }
}

function prettyLog(config: Config): boolean {
  return config.logFormat === 'pretty' || (config.logFormat === 'auto' && process.stdout.isTTY === true)
}

function exitAfterLog(output: LogOutput) {
  return async (code: number) => {
    await output.flush(LOG_FLUSH_MS)
    process.exit(code)
  }
}

// Without its PostgreSQL the embedded service cannot heal by itself: it stops, for its supervisor
// to start it again (a start deals with whatever the server left).
function stopWhenStoreLost(
  lost: Promise<string | undefined> | undefined,
  logger: Logger,
  exit: (code: number) => Promise<void>,
): void {
  void lost?.then((message) => {
    if (message === undefined) return
    logger.fatal(message)
    return exit(1)
  })
}

function sayListening(config: Config, port: number, logger: Logger): void {
  const summary = summarizeConfig(config)
  logger.info(
    { host: config.host, port, ...summary.fields },
    `plant store listening on ${config.host}:${port}: ${summary.text}`,
  )
}

const output = stdoutLog()
main(output).catch(async (error: unknown) => {
  // A failure that stops a start is said in one line; anything else is a bug, with its stack.
  // Its exit code is the CLI's for the same failure (2: a bad setting), 1 for anything else.
  // A database or pooler's refusal is said as the CLI says it, with its code.
  console.error(startFailureLine(error) ?? error)
  const failure = isFailure(error) ? error : unreachableDatabase(error)
  await exitAfterLog(output)(failure?.exitCode || 1)
})
