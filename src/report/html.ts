/**
 * The report as one HTML file that opens from disk: the page that `vmmkit
 * open` serves (dist/web/index.html, built from src/web by `npm run build`)
 * with the report's data embedded as a JSON script element, which the page
 * draws without starting its engine (Note [One page], src/web/main.ts).
 * The page holds its script, uPlot and its styles inline; nothing is
 * fetched.
 */
import { readFileSync } from 'node:fs';
import { packagePath } from '../util/package-path.js';
import { ReportPageMissingError } from './errors.js';
import type { ReportData } from './report-data.js';

/** Where the built page is, inside the package. */
export const PAGE_PATH = 'dist/web/index.html';

/** The built page's HTML (read once per call: a report is written once). */
export function pageHtml(): string {
  const missing = () =>
    new ReportPageMissingError(
      `the page is not built (${PAGE_PATH} is missing): run npm run build, which writes it`,
    );
  const path = packagePath(PAGE_PATH);
  if (path === undefined) throw missing();
  try {
    return readFileSync(path, 'utf8');
  } catch {
    throw missing();
  }
}

/** JSON inside a script element: `<` escaped, so no `</script>` in a string can end the element. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

/** The page with `id`'s JSON put where the shell marks it (`<!--data-->`). */
export function withEmbedded(html: string, id: string, value: unknown): string {
  const at = html.indexOf('<!--data-->');
  if (at < 0)
    throw new ReportPageMissingError('the built page has no place for data (<!--data-->): rebuild it');
  const element = `<script type="application/json" id="${id}">${scriptJson(value)}</script>`;
  return `${html.slice(0, at)}${element}${html.slice(at + '<!--data-->'.length)}`;
}

/** The report page for `data`: the page with the data embedded. */
export function renderReportHtml(data: ReportData, page: string = pageHtml()): string {
  return withEmbedded(page, 'vmmkit-data', data);
}
