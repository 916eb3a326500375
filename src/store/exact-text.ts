import { type ExecProtocolOptions, messages, type PGlite, protocol } from '@electric-sql/pglite'

type BackendMessage = Awaited<ReturnType<PGlite['execProtocolStream']>>[number]

const DATA_ROW = 0x44
// Unlike PGlite's own reader (a default TextDecoder), this one keeps a leading U+FEFF.
const decoder = new TextDecoder('utf-8', { ignoreBOM: true })

// The one patch of a library here. Upstream bug: PGlite's copy of pg-protocol (`BufferReader`,
// @electric-sql/pglite 0.5.16) decodes every value of a row with `new TextDecoder('utf-8')`, whose
// default drops a byte order mark at the start of each value: a name or tag starting with U+FEFF
// comes back without it. No public option reaches that decoder: `parsers` are handed the text
// already decoded, and reading every text column as bytea would spread the fix over each query.
// Every query, exec and transaction of PGlite goes through `execProtocolStream`, so this client's
// one is replaced by one that runs the same exchange through the public `execProtocolRawStream`
// and decodes rows exactly; the rest of the answer is still parsed by PGlite's own parser. LISTEN
// notifications are not delivered; nothing here uses them. test/store/exact-text.int.test.ts
// fails once upstream keeps the character, and this file can then go.
export function keepTextExact(client: PGlite): PGlite {
  client.execProtocolStream = async (message, { syncToFs, throwOnError = true, onNotice } = {}) => {
    const answer = await exchange(client, message, syncToFs)
    const kept: BackendMessage[] = []
    for (const backendMessage of parseAnswer(answer)) {
      if (backendMessage instanceof messages.DatabaseError && throwOnError) throw backendMessage
      if (backendMessage instanceof messages.NoticeMessage) onNotice?.(backendMessage)
      kept.push(backendMessage)
    }
    return kept
  }
  return client
}

async function exchange(client: PGlite, message: Uint8Array, syncToFs: ExecProtocolOptions['syncToFs']) {
  const chunks: Uint8Array[] = []
  // The chunks are views of the WebAssembly memory, which the next write reuses.
  await client.execProtocolRawStream(message, { syncToFs, onRawData: (chunk) => chunks.push(chunk.slice()) })
  const answer = new Uint8Array(chunks.reduce((length, chunk) => length + chunk.length, 0))
  let offset = 0
  for (const chunk of chunks) {
    answer.set(chunk, offset)
    offset += chunk.length
  }
  return answer
}

// Splits the answer into messages (a type byte, then an int32 length that counts itself).
function* parseAnswer(answer: Uint8Array): Generator<BackendMessage> {
  const view = new DataView(answer.buffer, answer.byteOffset, answer.byteLength)
  const parser = new protocol.Parser()
  let parsed: BackendMessage[] = []
  for (let offset = 0; offset + 5 <= answer.length; ) {
    const length = view.getUint32(offset + 1)
    const end = offset + 1 + length
    if (answer[offset] === DATA_ROW) {
      yield dataRow(view, offset + 5, length)
    } else {
      parser.parse(answer.subarray(offset, end), (backendMessage) => parsed.push(backendMessage))
      yield* parsed
      parsed = []
    }
    offset = end
  }
}

function dataRow(view: DataView, start: number, length: number): BackendMessage {
  const fields: (string | null)[] = new Array(view.getInt16(start))
  let offset = start + 2
  for (let index = 0; index < fields.length; index++) {
    const size = view.getInt32(offset)
    offset += 4
    if (size === -1) {
      fields[index] = null
      continue
    }
    fields[index] = decoder.decode(new Uint8Array(view.buffer, view.byteOffset + offset, size))
    offset += size
  }
  return new messages.DataRowMessage(length, fields)
}
