import { expect, test } from 'bun:test'
import { Buffer } from 'node:buffer'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { keyEncryptionKeyId, parseKeyEncryptionKeys } from '../../src/crypto/key-encryption-keys.ts'
import { expectCliSucceeded } from '../support/cli-assertions.ts'
import { listEveryPlant, postPlant } from '../support/plant-client.ts'
import { runCli, runServerToExit } from '../support/server-process.ts'
import { startService } from '../support/service.ts'

// Once `keys rotate` has retired the embedded store's generated key-encryption key for the
// operator's, the generated file is gone; a run without KEY_ENCRYPTION_KEYS must not make a new
// one, which would open none of the stored keys and sit beside the data.

const NEW = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')

function idOf(text: string): string {
  const keys = parseKeyEncryptionKeys(text)
  if (typeof keys === 'string' || keys[0] === undefined) throw new Error(`not a key list: ${keys}`)
  return keyEncryptionKeyId(keys[0])
}

const keyFile = (dataDir: string) =>
  readFile(join(dataDir, 'key-encryption-keys'), 'utf8').catch(() => 'none')

test('given an embedded store whose generated key-encryption key was retired, when a command or the server runs without KEY_ENCRYPTION_KEYS, then each is refused in one line naming it and no key file is written', async () => {
  // given a store with an owner's key, rotated to the operator's key and its generated key retired
  const store = await startService({ storage: 'embedded', secret: null, label: 'retired-key', instances: 0 })
  const dataDir = String(store.dataDir)
  try {
    const server = await store.startAnother()
    const owner = (await runCli(['token', 'issue', 'gil'], store.env)).stdout.trim()
    expect((await postPlant(server.url, owner, { id: 1, name: 'Sage' })).status).toBe(200)
    await server.stop()
    const generated = (await keyFile(dataDir)).trim()
    const rotated = await runCli(['keys', 'rotate', '--yes'], {
      ...store.env,
      KEY_ENCRYPTION_KEYS: `${NEW},${generated}`,
    })
    expectCliSucceeded(['keys', 'rotate', '--yes'], rotated)
    expect(await keyFile(dataDir)).toBe('none')
    // when a command runs without the variable
    const verified = await runCli(['projection', 'verify'], store.env)
    // then it is refused in one line that names the variable and the key the store needs
    const refusal = `KEY_ENCRYPTION_KEYS is not set, and DATA_DIR ${dataDir} cannot open its owners' keys: it holds no key-encryption-keys file with the key-encryption key ${idOf(NEW)} they are wrapped under; set KEY_ENCRYPTION_KEYS (or KEY_ENCRYPTION_KEYS_FILE) to the keys the store was last run with (no key is made in its place)`
    expect({ exitCode: verified.exitCode, stderr: verified.stderr }).toEqual({
      exitCode: 2,
      stderr: `${refusal}\n`,
    })
    expect(verified.stderr).not.toContain(idOf(generated))
    // and no key file was made, nor by the server's start, refused the same way
    expect(await keyFile(dataDir)).toBe('none')
    const start = await runServerToExit(store.env)
    expect({ exitCode: start.exitCode, stderr: start.stderr }).toEqual({
      exitCode: 2,
      stderr: `plant store cannot start: ${refusal}\n`,
    })
    expect(await keyFile(dataDir)).toBe('none')
    // while with the operator's key the store opens and serves what it held
    const withKey = await runCli(['projection', 'verify'], { ...store.env, KEY_ENCRYPTION_KEYS: NEW })
    expectCliSucceeded(['projection', 'verify'], withKey)
    const again = await store.startAnother({ KEY_ENCRYPTION_KEYS: NEW })
    try {
      expect(await listEveryPlant(again.url, owner)).toEqual([{ name: 'Sage' }])
    } finally {
      await again.stop()
    }
    expect(await keyFile(dataDir)).toBe('none')
  } finally {
    await store.stop()
  }
}, 120_000)
