/** @module What the browser tests do with a page: read an element's text, and click through to the next page. */
import type { Page } from "puppeteer-core";

/** The text of the first element `selector` finds. */
export function text(page: Page, selector: string): Promise<string> {
  return page.$eval(selector, (element) => element.textContent ?? "");
}

/** Clicks and waits for the page it leads to. */
export async function follow(page: Page, selector: string): Promise<void> {
  await Promise.all([page.waitForNavigation(), page.click(selector)]);
}
