// A process that writes DATA_DIR's key-encryption keys as a rotation does (writeLocalKeys) and
// stops before step `stopAt` of the durable write (1: write, 2: sync the file, 3: put it in place,
// 4: sync the folder), saying so on stdout, to be killed there by a test.
// Run: bun test/support/stopped-secret-write.ts <dataDir> <stopAt> <keys, comma-separated>
import process from 'node:process'
import { parseKeyEncryptionKeys } from '../../src/crypto/key-encryption-keys.ts'
import { withDataDir } from '../../src/data-dir/data-dir.ts'
import { DISK_STEPS, type SecretFileSteps } from '../../src/data-dir/local-file.ts'
import { writeLocalKeys } from '../../src/data-dir/local-keys.ts'

const [dataDir = '', stopAt = '0', text = ''] = process.argv.slice(2)
const keys = parseKeyEncryptionKeys(text)
if (typeof keys === 'string') throw new Error(keys)

let step = 0
const stopping =
  <Args extends unknown[]>(run: (...args: Args) => Promise<void>) =>
  async (...args: Args) => {
    step++
    if (step === Number(stopAt)) {
      process.stdout.write('stopped\n')
      await new Promise(() => {})
    }
    await run(...args)
  }
const steps: SecretFileSteps = {
  write: stopping(DISK_STEPS.write),
  sync: stopping(DISK_STEPS.sync),
  place: stopping(DISK_STEPS.place),
  remove: DISK_STEPS.remove,
}
await withDataDir(dataDir, (folder) => writeLocalKeys(folder, keys, steps))
process.stdout.write('written\n')
