import process from 'node:process'
import { issueToken, parseDuration } from '../auth/issue-token.ts'
import { loadOrCreateLocalSecret } from '../auth/local-secret.ts'
import type { Config } from '../config.ts'
import { isOwner } from '../domain/plant.ts'
import { Failure } from '../errors.ts'
import { badValue, parseArguments } from './arguments.ts'

const USAGE = 'token issue <subject> [--ttl <n>s|m|h|d]'

export async function issueTokenCommand(args: string[], config: Config): Promise<number> {
  const { values, positionals } = parseArguments(args, USAGE, { ttl: { type: 'string', default: '24h' } }, 1)
  const [subject = ''] = positionals
  if (!isOwner(subject))
    throw new Failure('BAD_USAGE', 'token issue needs a subject of 1 to 255 characters (Unicode code points)')
  const ttlSeconds = parseDuration(values.ttl)
  if (ttlSeconds === undefined) throw badValue('ttl', values.ttl, 'a duration', USAGE)
  const secret = config.auth.useLocalSecret
    ? await loadOrCreateLocalSecret(config.dataDir)
    : config.auth.secret
  if (!secret)
    throw new Failure(
      'BAD_USAGE',
      'only AUTH_JWKS_URL is configured: tokens come from your identity provider',
    )
  process.stdout.write(`${await issueToken(secret, { subject, ttlSeconds, now: new Date() })}\n`)
  return 0
}
