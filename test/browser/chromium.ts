import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** Where Debian's chromium package puts the browser. */
export const CHROMIUM_PATH = process.env.BATON_CHROMIUM ?? '/usr/bin/chromium';

const APT_UPDATE_TIMEOUT_MS = 300_000;
const APT_INSTALL_TIMEOUT_MS = 600_000;
/** The longest `ensureChromium` may take: the install's own deadlines (it fails naming them past that). */
export const CHROMIUM_INSTALL_TIMEOUT_MS = APT_UPDATE_TIMEOUT_MS + APT_INSTALL_TIMEOUT_MS;

/**
 * The browser the console tests drive. Playwright cannot download its own build here, so the
 * tests use Debian's `chromium` and install it when it is missing (CI runs as root, without a
 * terminal). A machine where that fails fails the tests, naming why — nothing is skipped.
 */
export function ensureChromium(): string {
  if (existsSync(CHROMIUM_PATH)) return CHROMIUM_PATH;
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env, timeout: APT_UPDATE_TIMEOUT_MS });
    execFileSync('apt-get', ['install', '-y', '-qq', 'chromium'], {
      stdio: 'inherit',
      env,
      timeout: APT_INSTALL_TIMEOUT_MS,
    });
  } catch (error) {
    throw new Error(
      `chromium is not at ${CHROMIUM_PATH} and 'apt-get install -y chromium' failed (${(error as Error).message}); ` +
        'install it, or point BATON_CHROMIUM at a Chromium binary',
    );
  }
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`apt-get installed chromium, but not at ${CHROMIUM_PATH}`);
  return CHROMIUM_PATH;
}

/**
 * Headless Chromium through playwright-core. `executablePath` is ensureChromium()'s, taken by the
 * caller before it starts anything else (the install may take minutes). --no-sandbox: CI runs as
 * root, where Chromium's sandbox refuses to start.
 */
export function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}
