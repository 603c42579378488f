import type { Page } from "puppeteer-core";

/**
 * Clicks `selector` inside the page, in one task. The page re-renders its tables on every poll, so the element
 * handle behind puppeteer's `page.click` can be detached between finding it, scrolling it into view and clicking
 * it ("Node is detached from document"); an in-page click finds and clicks the current element at once.
 */
export async function clickNow(page: Page, selector: string): Promise<void> {
  await page.$eval(selector, (element) => (element as HTMLElement).click());
}
