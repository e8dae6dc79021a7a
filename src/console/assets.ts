/**
 * @module The console's style sheet, script and icon, imported as text so they travel inside the module graph (a compiled
 * binary and Deno Deploy serve them with no file access), and served under a URL that changes with their content.
 */
import SCRIPT from "./assets/console.js" with { type: "text" };
import STYLE from "./assets/console.css" with { type: "text" };
import ICON from "./assets/favicon.svg" with { type: "text" };

/** A short fingerprint of a text (FNV-1a), so a changed asset gets a new URL and the old one can be cached for good. */
function fingerprint(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return (hash >>> 0).toString(36);
}

const ASSETS: Record<string, { body: string; type: string }> = {
  "console.css": { body: STYLE, type: "text/css; charset=utf-8" },
  "console.js": { body: SCRIPT, type: "text/javascript; charset=utf-8" },
  "favicon.svg": { body: ICON, type: "image/svg+xml" },
};

/** The URL of each asset, with its fingerprint. */
export const ASSET_URLS = {
  style: `/ui/assets/console.css?v=${fingerprint(STYLE)}`,
  script: `/ui/assets/console.js?v=${fingerprint(SCRIPT)}`,
  icon: `/ui/assets/favicon.svg?v=${fingerprint(ICON)}`,
};

/** The asset of that file name, or undefined. */
export function asset(name: string): Response | undefined {
  const found = ASSETS[name];
  if (!found) return undefined;
  return new Response(found.body, {
    headers: { "content-type": found.type, "cache-control": "public, max-age=31536000, immutable" },
  });
}
