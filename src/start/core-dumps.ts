import process from 'node:process'

// A core dump of the service holds whatever its memory held: the key-encryption keys and the
// owners' keys in use (docs/keys.md). So the service lowers its own core-file limit to zero, soft
// and hard, before it reads a key: setrlimit(RLIMIT_CORE), through the runtime's foreign function
// interface (Linux only). Undefined when done; otherwise why not, for the start to say.
const RLIMIT_CORE = 4
const LIBC = 'libc.so.6'

type DenoFfi = {
  permissions: { querySync: (descriptor: { name: 'ffi' }) => { state: string } }
  dlopen: (
    path: string,
    symbols: { setrlimit: { parameters: ['i32', 'buffer']; result: 'i32' } },
  ) => { symbols: { setrlimit: (resource: number, limits: Uint8Array) => number }; close: () => void }
}

export async function turnOffCoreDumps(): Promise<string | undefined> {
  if (process.platform !== 'linux') return 'core dumps are left as the system sets them (not Linux)'
  // struct rlimit: the soft and the hard limit, each 8 bytes, both zero.
  const zero = new Uint8Array(16)
  try {
    const deno = (globalThis as { Deno?: DenoFfi }).Deno
    if (deno) {
      if (deno.permissions.querySync({ name: 'ffi' }).state !== 'granted') {
        return 'core dumps are left as the system sets them: Deno was not given --allow-ffi (or run it under `ulimit -c 0`)'
      }
      const libc = deno.dlopen(LIBC, { setrlimit: { parameters: ['i32', 'buffer'], result: 'i32' } })
      const failed = libc.symbols.setrlimit(RLIMIT_CORE, zero) !== 0
      libc.close()
      return failed ? 'core dumps are left as the system sets them: setrlimit failed' : undefined
    }
    const { dlopen, FFIType, ptr } = await import('bun:ffi')
    const libc = dlopen(LIBC, { setrlimit: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 } })
    const failed = libc.symbols.setrlimit(RLIMIT_CORE, ptr(zero)) !== 0
    libc.close()
    return failed ? 'core dumps are left as the system sets them: setrlimit failed' : undefined
  } catch (error) {
    return `core dumps are left as the system sets them: ${error instanceof Error ? error.message.split('\n')[0] : error}`
  }
}
