import type { Config } from './config.ts'

export type ConfigSummary = {
  // For the start's log line: what runs, as fields and in words.
  fields: { storage: Config['storage']['kind']; database?: string; dataDir?: string; feed: string }
  text: string
}

// Which storage the service runs on and whether the feed is on, so that a start on the wrong
// store (a misspelt DATABASE_URL) shows in its first line. A database is named by its hosts and
// name only: the user, the password and the query (which may carry one) are left out.
export function summarizeConfig({ storage, feed }: Config): ConfigSummary {
  const feedText = feed ? `on: stream ${feed.stream} at ${feed.servers.join(',')}` : 'off'
  switch (storage.kind) {
    case 'postgres': {
      const database = databaseOf(storage.url)
      return {
        fields: { storage: 'postgres', database, feed: feedText },
        text: `PostgreSQL ${database}, feed ${feedText}`,
      }
    }
    case 'embedded':
      return {
        fields: { storage: 'embedded', dataDir: storage.dataDir, feed: feedText },
        text: `the embedded store in DATA_DIR ${storage.dataDir}, feed ${feedText}`,
      }
    case 'memory':
      return {
        fields: { storage: 'memory', feed: feedText },
        text: `a store in memory (DATA_DIR=memory:, nothing kept), feed ${feedText}`,
      }
  }
}

// `postgres://user:pass@h1:5432,h2:5432/plants?…` → `h1:5432,h2:5432/plants`, by hand: the
// several-hosts form is no URL that `URL` parses.
function databaseOf(url: string): string {
  const [beforeQuery = ''] = url.replace(/^postgres(ql)?:\/\//, '').split('?')
  const afterUser = beforeQuery.slice(beforeQuery.lastIndexOf('@') + 1)
  const slash = afterUser.indexOf('/')
  const hosts = slash === -1 ? afterUser : afterUser.slice(0, slash)
  const name = slash === -1 ? '' : afterUser.slice(slash + 1)
  return `${hosts || '(default host)'}/${name || '(default database)'}`
}
