import process from 'node:process'
import { issueToken, parseDuration } from '../auth/issue-token.ts'
import { loadOrCreateLocalSecret } from '../auth/local-secret.ts'
import type { Config } from '../config.ts'
import { UsageError } from './usage-error.ts'

export async function issueTokenCommand(args: string[], config: Config): Promise<number> {
  const [subject, ...options] = args
  if (!subject || subject.length > 255)
    throw new UsageError('token issue needs a subject of 1 to 255 characters')
  const ttlText = options[0] === '--ttl' ? options[1] : options.length === 0 ? '24h' : undefined
  const ttlSeconds = ttlText === undefined ? undefined : parseDuration(ttlText)
  if (ttlSeconds === undefined || options.length > 2) {
    throw new UsageError('usage: token issue <subject> [--ttl <n>s|m|h|d]')
  }
  const secret = config.auth.useLocalSecret
    ? await loadOrCreateLocalSecret(config.dataDir)
    : config.auth.secret
  if (!secret)
    throw new UsageError('only AUTH_JWKS_URL is configured: tokens come from your identity provider')
  process.stdout.write(`${await issueToken(secret, { subject, ttlSeconds, now: new Date() })}\n`)
  return 0
}
