import { join } from 'node:path'
import type { Config } from '../config/config.ts'
import { LOCAL_KEYS_FILE } from '../data-dir/local-keys.ts'

// Where the key-encryption keys of the store a command opened are kept: the file in DATA_DIR that
// holds the embedded default's generated KEK (`generated`), or the operator's setting. A restore
// needs them beside an export, and a DATA_DIR that is lost takes its file with it.
function keysKeptIn(config: Config): { place: string; generated: boolean } {
  const { storage } = config
  if (storage.kind === 'embedded' && storage.keys === undefined)
    return { place: join(storage.dataDir, LOCAL_KEYS_FILE), generated: true }
  return { place: 'KEY_ENCRYPTION_KEYS (or the file KEY_ENCRYPTION_KEYS_FILE names)', generated: false }
}

// One line saying which KEKs (by id) an export's keys are wrapped under and where they are kept.
export function keysNeededLine(ids: string[], config: Config): string {
  if (ids.length === 0) return 'the file holds no owner key: its restore needs no key-encryption key'
  const { place, generated } = keysKeptIn(config)
  const keep = generated
    ? 'keep a copy outside DATA_DIR, apart from the exports'
    : 'keep it apart from the exports'
  return `its restore needs key-encryption key${ids.length > 1 ? 's' : ''} ${ids.join(', ')}, kept in ${place}: ${keep} (docs/operating.md, Backups)`
}
