import { chromium } from 'playwright-core'

// Debian's chromium, installed by .ci/run. Without it the tests fail: they never skip.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
// As root in a sandboxed machine: no setuid sandbox, no GPU, and none of the background
// connections to Google that a closed network refuses.
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

// Playwright gives each launch a fresh, empty profile of its own.
export function launchChromium() {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS })
}
