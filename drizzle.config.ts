import { defineConfig } from 'drizzle-kit'

export default defineConfig({
  dialect: 'postgresql',
  schema: './src/event-log/schema.ts',
  out: './db/migrations',
})
