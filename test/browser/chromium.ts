/** Debian's chromium, driven by playwright-core, as the browser tests and the screenshot script use it. */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium } from 'playwright-core';
import { afterAll } from 'vitest';

export const CHROMIUM = '/usr/bin/chromium';

/** Whether this is CI, where the browser tests must run, not skip. */
export const CI = process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';

/**
 * Where a test file's screenshots and pages go: VMMKIT_SCREENSHOTS when set
 * (kept, to look at), else a temporary folder removed after the file.
 */
export function screenshotFolder(prefix: string): string {
  const keep = process.env.VMMKIT_SCREENSHOTS;
  if (keep !== undefined) {
    mkdirSync(keep, { recursive: true });
    return keep;
  }
  const out = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(out, { recursive: true, force: true }));
  return out;
}

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
