import process from 'node:process'
import { issueToken } from '../auth/issue-token.ts'
import { loadOrCreateLocalSecret } from '../auth/local-secret.ts'
import { requireTokenKeys } from '../config/config.ts'
import { isOwner } from '../domain/plant.ts'
import { Failure } from '../shared/errors.ts'
import { badValue } from './arguments.ts'
import { command } from './command.ts'
import { parseDuration } from './duration.ts'

export const tokenIssueCommand = command({
  name: 'token issue',
  args: '<subject> [--ttl <n>s|m|h|d]',
  purpose: 'print an HS256 token for <subject> (local secret or AUTH_JWT_SECRET)',
  notes: ['--ttl: how long the token is valid, in seconds, minutes, hours or days (24h by default)'],
  options: { ttl: { type: 'string', default: '24h' } },
  positionals: 1,
  reads: ['tokens', 'DATABASE_URL', 'DATA_DIR'],
  run: async ({ values, positionals }, config) => {
    const [subject = ''] = positionals
    if (!isOwner(subject))
      throw new Failure(
        'BAD_USAGE',
        'token issue needs a subject of 1 to 255 characters (Unicode code points)',
      )
    const ttlSeconds = parseDuration(values.ttl)
    if (ttlSeconds === undefined) throw badValue('ttl', values.ttl, 'a duration')
    requireTokenKeys(config)
    const secret = config.auth.useLocalSecret
      ? await loadOrCreateLocalSecret(config.dataDir)
      : config.auth.secret
    if (!secret)
      throw new Failure(
        'BAD_SETTING',
        'only AUTH_JWKS_URL is configured: tokens come from your identity provider',
      )
    process.stdout.write(`${await issueToken(secret, { subject, ttlSeconds, now: new Date() })}\n`)
    return 0
  },
})
