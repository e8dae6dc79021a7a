/**
 * @module Chromium for one browser test: launched headless on a fresh profile with the flags that keep it off the
 * network, and a folder for its screenshots (`MODELGATE_SCREENSHOTS` when set, kept; else a temporary one). Disposing
 * of it closes the browser and removes what it made.
 */
import puppeteer, { type Browser } from "puppeteer-core";
import { CHROMIUM_FLAGS } from "./_chromium.ts";

/** A launched browser and where its test's screenshots go. */
export interface Launched extends AsyncDisposable {
  browser: Browser;
  shots: string;
}

/**
 * Launches Chromium at `path`; `name` names the screenshot folder when it is a temporary one, and `args` are flags of
 * the test's own.
 */
export async function launchChromium(
  path: string,
  { name, args = [] }: { name: string; args?: string[] },
): Promise<Launched> {
  const profile = await Deno.makeTempDir({ prefix: "modelgate-chromium-" });
  const kept = Deno.env.get("MODELGATE_SCREENSHOTS");
  const shots = kept ?? await Deno.makeTempDir({ prefix: `modelgate-${name}-` });
  if (kept) await Deno.mkdir(kept, { recursive: true });
  const browser = await puppeteer.launch({
    executablePath: path,
    headless: true,
    args: [...CHROMIUM_FLAGS, ...args, `--user-data-dir=${profile}`],
    defaultViewport: { width: 1280, height: 800 },
    timeout: 30_000,
  });
  return {
    browser,
    shots,
    async [Symbol.asyncDispose]() {
      await browser.close();
      await Deno.remove(profile, { recursive: true }).catch(() => {});
      if (!kept) await Deno.remove(shots, { recursive: true }).catch(() => {});
    },
  };
}
