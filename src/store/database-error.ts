// The first line of what the database said: drizzle wraps the driver's error in a message that
// holds the SQL text, which an operator's one-line message leaves out.
export function databaseMessage(error: unknown): string {
  let root = error as { cause?: unknown; detail?: string; message?: string }
  while (root.cause) root = root.cause as typeof root
  const message = String(root.message ?? root).split('\n')[0] ?? ''
  return root.detail ? `${message} (${root.detail})` : message
}
