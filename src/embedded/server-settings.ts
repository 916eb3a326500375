// The settings the embedded PostgreSQL is started with, on its command line, so that they are the
// service's whatever postgresql.conf says. Sized for a small machine; docs/operating.md (The
// embedded default) gives the figures they were chosen by.
export type ServerSettingsOptions = {
  socketDirectory: string
  // A DATA_DIR keeps PostgreSQL's durability; a throwaway store for tests trades it for speed.
  durable: boolean
  // More than the small machine's 40: a test process's many stores, each with a pool of its own.
  maxConnections?: number
}

const SMALL_MACHINE = {
  // Unix socket only, in a folder of mode 0700: nobody else can connect, so trust is safe.
  listen_addresses: '',
  unix_socket_permissions: '0700',
  port: '5432',
  max_connections: '40',
  shared_buffers: '32MB',
  wal_buffers: '1MB',
  work_mem: '4MB',
  maintenance_work_mem: '32MB',
  // PostgreSQL 18 reads through worker processes by default (three); one is enough for a store
  // that fits in memory, and each costs a process.
  io_method: 'worker',
  io_workers: '1',
  max_wal_senders: '0',
  max_replication_slots: '0',
  max_logical_replication_workers: '0',
  max_worker_processes: '4',
  max_parallel_workers: '0',
  max_parallel_workers_per_gather: '0',
  huge_pages: 'off',
  // Statements are planned once per connection (database/database.ts): keep the statistics fresh.
  autovacuum: 'on',
  // The server's log (postgres.log beside its folder) holds its starts, stops and crashes only:
  // no client error or statement text, which could hold a person's data (docs/erasure.md).
  log_min_messages: 'log',
  log_min_error_statement: 'panic',
  log_checkpoints: 'off',
  log_autovacuum_min_duration: '-1',
}

const DURABLE = { fsync: 'on', synchronous_commit: 'on', full_page_writes: 'on', wal_level: 'replica' }

const THROWAWAY = {
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
  wal_level: 'minimal',
  shared_buffers: '16MB',
  // Few WAL segments kept (of 1 MB, cluster-cache.ts): less to copy into each test process.
  min_wal_size: '2MB',
}

export function serverSettings({
  socketDirectory,
  durable,
  maxConnections,
}: ServerSettingsOptions): string[] {
  const settings = {
    ...SMALL_MACHINE,
    ...(maxConnections === undefined ? {} : { max_connections: String(maxConnections) }),
    // A list of folders: one, quoted, so that a comma or a space in its path is kept.
    unix_socket_directories: `"${socketDirectory.replaceAll('"', '""')}"`,
    ...(durable ? DURABLE : THROWAWAY),
  }
  return Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`])
}
