/** Debian's chromium, driven by playwright-core, as the browser tests and the screenshot script use it. */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Why the browser cannot run here, or undefined when it can. */
export function chromiumMissing(): string | undefined {
  return existsSync(CHROMIUM)
    ? undefined
    : `${CHROMIUM} is missing (npm test's pretest installs it: scripts/setup-browser.mjs)`;
}

export interface OpenBrowser {
  readonly browser: BrowserContext;
  close(): Promise<void>;
}

/** A headless chromium with a fresh profile, nothing reaching the network on its own. */
export async function launchChromium(): Promise<OpenBrowser> {
  const profile = mkdtempSync(join(tmpdir(), 'vmmkit-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 900 },
  });
  return {
    browser: context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export type { Browser };
