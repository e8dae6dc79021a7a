/**
 * @module The console's entry in the app's endpoint table, its pages loaded on first use: a gateway whose console
 * is never opened does not hold their code in memory.
 */
import type { Endpoint } from "../handlers/context.ts";

/** Everything under /ui, any method; the first request loads the console (./routes.ts) and hands itself over. */
export const CONSOLE_ENDPOINT: Endpoint = {
  method: "*",
  path: "/ui/*",
  operator: true,
  errors: () => "openai-chat",
  async handle(req, ctx) {
    const { consolePages } = await import("./routes.ts");
    return await consolePages(req, ctx);
  },
};
