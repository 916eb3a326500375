import { connect, type Socket } from 'node:net'
import type postgres from 'postgres'
import { postgresClient } from './postgres-client.ts'

type Host = { host: string; port: number }

// Connections to the primary among the hosts of a libpq multi-host URL, failing fast while there
// is none. postgres.js, given several hosts and `target_session_attrs=primary`, tries them in turn
// until one qualifies, with no end: while no host is the primary (a failover under way) every query
// would wait for the promotion, and its connections spin through the hosts. libpq tries each host
// once and then fails. So the pool is given one host and this socket factory (postgres.js's
// public `socket` option): it asks each host, in the order listed, whether it is in recovery and
// connects to the first that is not; with none, to the first host, which postgres.js's own check
// on the new connection then refuses, so the query fails as unavailable (503) at once.
export type PrimaryHost = {
  // postgres.js options that route its connections here.
  options: { host: string; port: number; socket: () => Promise<Socket> }
  close: () => Promise<void>
}

// Undefined for a URL with a single host or without `target_session_attrs=primary`: postgres.js
// handles those alone.
export function primaryHost(url: string): PrimaryHost | undefined {
  const queryStart = url.indexOf('?')
  const params = new URLSearchParams(queryStart === -1 ? '' : url.slice(queryStart + 1))
  const { start, end } = hostListAt(url)
  const hostList = url.slice(start, end)
  if (params.get('target_session_attrs') !== 'primary' || !hostList.includes(',')) return undefined
  const hosts = hostList.split(',').map(parseHost)
  params.delete('target_session_attrs')
  const path = url.slice(end, queryStart === -1 ? undefined : queryStart)
  const probes = hosts.map(({ host, port }) =>
    postgresClient(`${url.slice(0, start)}${formatHost(host)}:${port}${path}?${params}`, {
      max: 1,
      connect_timeout: 2,
      idle_timeout: 30,
      backoff: () => 0,
      onnotice: () => {},
      connection: { application_name: 'plant-store-probe', statement_timeout: 2000 },
    }),
  )
  const first = hosts[0] as Host
  return {
    options: {
      host: first.host,
      port: first.port,
      socket: async () => {
        for (const [index, host] of hosts.entries()) {
          const probe = probes[index] as postgres.Sql
          const standby = await probe`select pg_is_in_recovery() as standby`.then(
            ([row]) => row?.standby as boolean | undefined,
            () => undefined,
          )
          if (standby === false) return connect(host.port, host.host)
        }
        return connect(first.port, first.host)
      },
    },
    close: async () => {
      await Promise.all(probes.map((probe) => probe.end({ timeout: 1 })))
    },
  }
}

// Where `h1:5432,h2:5432` stands in `postgres://user:password@h1:5432,h2:5432/db?…`.
function hostListAt(url: string): { start: number; end: number } {
  const authorityStart = url.indexOf('://') + 3
  const authority = url.slice(authorityStart).split(/[?/]/)[0] ?? ''
  const start = authorityStart + authority.lastIndexOf('@') + 1
  return { start, end: authorityStart + authority.length }
}

function parseHost(text: string): Host {
  const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(text)
  const host = decodeURIComponent(match?.[1] ?? text).replace(/^\[(.*)\]$/, '$1')
  return { host, port: Number(match?.[2] ?? 5432) }
}

function formatHost(host: string): string {
  return host.includes(':') ? `[${host}]` : encodeURIComponent(host)
}
