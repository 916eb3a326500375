import type postgres from 'postgres'

// A postgres.js client whose every statement the client itself cancels once it has run `ms`
// (PostgreSQL's cancel request, which answers 57014 as its statement_timeout does). For a server
// that cannot be given statement_timeout: a pooler refuses it as a startup parameter, and a
// session setting would leak to whoever gets the server connection next. The timer starts with
// the statement, so time waiting for a connection of the pool counts too.
export function cancelAfter<Sql extends object>(sql: Sql, ms: number): Sql {
  const timed = (result: unknown): unknown => {
    if (isQuery(result)) arm(result, ms)
    return result
  }
  // Each function a transaction or a reserved connection is handed runs its statements timed too.
  const wrapCallback = (args: unknown[]) =>
    args.map((arg) => (typeof arg === 'function' ? (inner: object) => arg(cancelAfter(inner, ms)) : arg))
  return new Proxy(sql, {
    apply: (target, self, args) => timed(Reflect.apply(target as () => unknown, self, args)),
    get: (target, property, receiver) => {
      const value = Reflect.get(target, property, receiver)
      if (typeof value !== 'function') return value
      if (property === 'unsafe' || property === 'file')
        return (...args: unknown[]) => timed(Reflect.apply(value, target, args))
      if (property === 'begin' || property === 'savepoint')
        return (...args: unknown[]) => Reflect.apply(value, target, wrapCallback(args))
      if (property === 'reserve')
        return async (...args: unknown[]) => cancelAfter(await Reflect.apply(value, target, args), ms)
      return value
    },
  })
}

function isQuery(value: unknown): value is postgres.PendingQuery<postgres.Row[]> {
  return value instanceof Promise && typeof (value as { cancel?: unknown }).cancel === 'function'
}

function arm(query: postgres.PendingQuery<postgres.Row[]>, ms: number): void {
  const timer = setTimeout(() => query.cancel(), ms)
  // The native `then`, not the query's own: postgres.js starts a statement when its `then` is
  // called, and this must neither start it early nor leave its failure unhandled.
  const settled = () => clearTimeout(timer)
  Promise.prototype.then.call(query, settled, settled)
}
