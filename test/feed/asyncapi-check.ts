import Ajv, { type ValidateFunction } from 'ajv'

// What a consumer does with the feed's AsyncAPI document: finds the channel whose address a
// message's subject matches, and checks the message's headers and payload against that channel's
// message. Only the document is read: nothing of the service's code.

type Ref = { $ref: string }
type Channel = { address: string; messages: Record<string, Ref> }
type Message = { name: string; headers: Ref; payload: Ref }
export type AsyncApiDocument = {
  asyncapi: string
  channels: Record<string, Channel>
  components: { messages: Record<string, Message>; schemas: Record<string, object> }
}

export type MessageCheck = { message?: string; errors: string[] }

export function messageChecker(document: AsyncApiDocument) {
  // `date-time` is also a pattern in the document; Ajv without ajv-formats would refuse the keyword.
  const ajv = new Ajv({ allErrors: true, formats: { 'date-time': true } })
  const compiled = new Map<string, ValidateFunction>()
  const resolve = <T>(ref: Ref): T => {
    let found: unknown = document
    for (const key of ref.$ref.replace(/^#\//, '').split('/')) found = (found as Record<string, unknown>)[key]
    return found as T
  }
  const validator = (ref: Ref) => {
    let validate = compiled.get(ref.$ref)
    if (!validate) {
      validate = ajv.compile(resolve<object>(ref))
      compiled.set(ref.$ref, validate)
    }
    return validate
  }
  const channels = Object.values(document.channels).map((channel) => ({
    // A parameter is one token or more: a subject prefix may have dots of its own.
    matches: new RegExp(`^${channel.address.replaceAll('.', '\\.').replace(/\{[^}]+\}/g, '.+')}$`),
    messages: Object.values(channel.messages).map((ref) => resolve<Message>(ref)),
  }))
  return (subject: string, headers: Record<string, string>, body: string): MessageCheck => {
    const channel = channels.find(({ matches }) => matches.test(subject))
    if (!channel) return { errors: [`no channel's address matches ${subject}`] }
    const payload: unknown = JSON.parse(body)
    for (const message of channel.messages) {
      const errors = [
        ...problems(validator(message.headers), headers, 'headers'),
        ...problems(validator(message.payload), payload, 'payload'),
      ]
      if (errors.length === 0) return { message: message.name, errors }
      if (channel.messages.length === 1) return { message: message.name, errors }
    }
    return { errors: [`no message of the channel of ${subject} fits`] }
  }
}

function problems(validate: ValidateFunction, value: unknown, part: string): string[] {
  if (validate(value)) return []
  return (validate.errors ?? []).map((error) => `${part}${error.instancePath} ${error.message}`)
}
