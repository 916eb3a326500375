import { connect, type NatsConnection } from '@nats-io/transport-node'
import type { Logger } from '../logger.ts'
import { backoffDelay, sleep } from './backoff.ts'

export type NatsLink = {
  // The first attempt: the connection, or undefined when NATS did not answer it.
  firstAttempt: Promise<NatsConnection | undefined>
  // The connection once there is one; later attempts go on in the background until then.
  ready: Promise<NatsConnection>
  connected: () => boolean
  close: () => Promise<void>
}

const CONNECT_TIMEOUT_MS = 2000

// Connects and stays connected: the client reconnects by itself once it has connected, and
// pings often enough to notice a network that went silent within seconds.
export function linkToNats(servers: string[], logger: Logger): NatsLink {
  let connection: NatsConnection | undefined
  let isConnected = false
  let closed = false
  let attempts = 0
  const attempt = async (): Promise<NatsConnection | undefined> => {
    try {
      return await connect({
        servers,
        name: 'plant-store',
        timeout: CONNECT_TIMEOUT_MS,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        pingInterval: 3000,
        maxPingOut: 2,
      })
    } catch (error) {
      // Said once; the attempts go on quietly until one succeeds.
      if (attempts++ === 0) logger.warn({ err: error, servers }, 'the event feed cannot reach NATS yet')
      else logger.debug({ err: error, servers }, 'the event feed still cannot reach NATS')
      return undefined
    }
  }
  const watch = async (nc: NatsConnection) => {
    connection = nc
    isConnected = true
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') isConnected = false
      if (status.type === 'reconnect') isConnected = true
    }
    isConnected = false
  }
  const firstAttempt = attempt()
  const ready = (async () => {
    let nc = await firstAttempt
    for (let failures = 0; nc === undefined; failures++) {
      if (closed) throw new Error('the NATS link is closed')
      await sleep(backoffDelay(failures, 250, 2000))
      nc = closed ? undefined : await attempt()
    }
    if (closed) {
      await nc.close()
      throw new Error('the NATS link is closed')
    }
    if (attempts > 0) logger.info({ servers }, 'the event feed reached NATS')
    void watch(nc)
    return nc
  })()
  ready.catch(() => {})
  return {
    firstAttempt,
    ready,
    connected: () => isConnected,
    close: async () => {
      closed = true
      isConnected = false
      await connection?.close()
    },
  }
}
