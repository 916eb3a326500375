// The pinned Deno binary (devDependency `deno`), never one that happens to be on the PATH. A
// missing binary fails the suite. The binary itself, not the package's node wrapper in
// node_modules/.bin, which does not pass signals on.
export const DENO = new URL('../../node_modules/deno/deno', import.meta.url).pathname

// The server under Deno with the permissions the README documents: the network, the environment,
// the hostname for log lines, the project's files, and the data directory (embedded only).
export function denoServerCommand(dataDir?: string): string[] {
  const files = dataDir ? [`--allow-read=.,${dataDir}`, `--allow-write=${dataDir}`] : ['--allow-read=.']
  return [DENO, 'run', '--allow-net', '--allow-env', '--allow-sys=hostname', ...files, 'src/main.ts']
}
