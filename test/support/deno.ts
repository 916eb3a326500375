// The pinned Deno binary (devDependency `deno`), never one that happens to be on the PATH. A
// missing binary fails the suite. The binary itself, not the package's node wrapper in
// node_modules/.bin, which does not pass signals on.
export const DENO = new URL('../../node_modules/deno/deno', import.meta.url).pathname

// The server under Deno with the permissions docs/operating.md documents: the network, the environment,
// the hostname for log lines, the project's files; and for the embedded server, the user id (root
// runs PostgreSQL as another user), its programs (a watchdog shell, initdb, postgres, id), /proc
// (to tell a postmaster left running by a killed service) and the data directory; and the C
// library, through which it turns its core dumps off. `runtimeFlags` go before the script (e.g.
// `--v8-flags=…`).
export function denoServerCommand(dataDir?: string, runtimeFlags: string[] = []): string[] {
  const embedded = dataDir
    ? [
        '--allow-sys=hostname,uid',
        '--allow-run',
        `--allow-read=.,/proc,${dataDir}`,
        `--allow-write=${dataDir}`,
      ]
    : ['--allow-sys=hostname', '--allow-read=.']
  return [
    DENO,
    'run',
    '--allow-net',
    '--allow-env',
    '--allow-ffi',
    ...embedded,
    ...runtimeFlags,
    'src/start/main.ts',
  ]
}
