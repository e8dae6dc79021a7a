/**
 * @module Charts as SVG drawn on the server: bars per day, stacked by series (models, tokens, groups...), with a
 * legend and a tooltip per bar. Pure: data in, escaped markup out; colours come from the style sheet by class.
 */
import { amount } from "./format.ts";
import { type Html, html } from "./html.ts";

/** One stacked series: a name and its value on each day of the axis. */
export interface Series {
  name: string;
  values: number[];
}

/** What a chart shows. */
export interface ChartData {
  /** The axis: UTC days, oldest first. */
  days: string[];
  series: Series[];
  /** The unit of the values, plural: "tokens", "requests". */
  unit: string;
  /** What the chart is, for screen readers and as its caption. */
  label: string;
  /** Drawn across the whole page rather than in a column: a wider canvas keeps its text the same size. */
  wide?: boolean;
  /** Series names in the order colours go to them, so two charts of the same things colour them alike. */
  order?: readonly string[];
  /** Writes a value without its unit, for amounts that are not counts (money); counts are shortened (1.2M). */
  format?(value: number): string;
}

const WIDTH = 640;
const WIDE = 1200;
const HEIGHT = 220;
const LEFT = 52;
const RIGHT = 8;
const TOP = 12;
const BOTTOM = 26;
/** Distinct colours (s0..s6); series beyond them are summed into "other". */
const COLOURS = 7;

/** A round step for `ticks` gridlines reaching at least `max` (1, 2 or 5 times a power of ten). */
function niceStep(max: number, ticks: number): number {
  const raw = (max > 0 ? max : 1) / ticks;
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= raw)!;
}

/** `11-22` under each bar, or under every few when the days are many. */
function dayLabel(day: string, i: number, n: number): string {
  const every = Math.ceil(n / 14);
  return (n - 1 - i) % every === 0 ? day.slice(5) : "";
}

/**
 * The series in `order` (else with the most in total first), the rest beyond the colours summed into one "other".
 */
export function topSeries(series: readonly Series[], days: number, order?: readonly string[]): Series[] {
  const total = (s: Series) => s.values.reduce((a, b) => a + b, 0);
  const rank = (s: Series) => order!.includes(s.name) ? order!.indexOf(s.name) : order!.length;
  const sorted = series.filter((s) => total(s) > 0).sort((a, b) =>
    order ? rank(a) - rank(b) : total(b) - total(a) || a.name.localeCompare(b.name)
  );
  if (sorted.length <= COLOURS) return sorted;
  const other = { name: "other", values: Array.from({ length: days }, () => 0) };
  for (const s of sorted.slice(COLOURS - 1)) s.values.forEach((v, i) => other.values[i] += v);
  return [...sorted.slice(0, COLOURS - 1), other];
}

/** A stacked bar chart, or a sentence saying there is nothing to draw. */
export function barChart(data: ChartData): Html {
  const series = topSeries(data.series, data.days.length, data.order);
  const width = data.wide ? WIDE : WIDTH;
  const totals = data.days.map((_, i) => series.reduce((sum, s) => sum + s.values[i], 0));
  if (totals.every((t) => t === 0)) {
    return html`
      <figure class="chart empty">
        <figcaption>${data.label}</figcaption>
        <p class="empty">No ${data.unit} on these days.</p>
      </figure>
    `;
  }
  const tick = data.format ?? ((v: number) => amount(v, "").trim());
  const said = (v: number) => data.format ? `${data.format(v)} ${data.unit}` : amount(v, data.unit);
  const step = niceStep(Math.max(...totals), 4);
  const top = step * Math.ceil(Math.max(...totals) / step);
  const plotW = width - LEFT - RIGHT;
  const plotH = HEIGHT - TOP - BOTTOM;
  const y = (value: number) => TOP + plotH - (value / top) * plotH;
  const slot = plotW / data.days.length;
  const barW = Math.min(48, slot * 0.7);
  const grid = [];
  for (let v = 0; v <= top; v += step) {
    grid.push(html`<line class="grid" x1="${LEFT}" x2="${width - RIGHT}" y1="${y(v)}" y2="${y(v)}"></line>
<text class="tick" x="${LEFT - 6}" y="${y(v) + 4}" text-anchor="end">${tick(v)}</text>`);
  }
  const bars = data.days.map((day, i) => {
    const x = LEFT + slot * i + (slot - barW) / 2;
    let base = 0;
    const parts = series.map((s, k) => {
      const value = s.values[i];
      if (value <= 0) return "";
      const rect = html`
        <rect class="${s.name === "other" ? "so" : `s${k}`}" x="${x.toFixed(1)}" y="${y(base + value).toFixed(
          1,
        )}" width="${barW.toFixed(1)}" height="${(y(base) - y(base + value)).toFixed(1)}">
          <title>${day} · ${s.name}: ${said(value)}</title>
        </rect>
      `;
      base += value;
      return rect;
    });
    const label = dayLabel(day, i, data.days.length);
    return html`<g><title>${day}: ${said(totals[i])}</title>${parts}<text class="tick" x="${
      (x + barW / 2).toFixed(1)
    }" y="${HEIGHT - 8}" text-anchor="middle">${label}</text></g>`;
  });
  const legend = series.map((s, k) => {
    const sum = s.values.reduce((a, b) => a + b, 0);
    return html`<li><span class="swatch ${
      s.name === "other" ? "so" : `s${k}`
    }"></span><span class="name">${s.name}</span> <span class="muted">${said(sum)}</span></li>`;
  });
  return html`
    <figure class="chart">
      <figcaption>${data.label}</figcaption>
      <svg viewBox="0 0 ${width} ${HEIGHT}" role="img" aria-label="${data.label}">${grid}${bars}</svg>
      <ul class="legend">${legend}</ul>
    </figure>
  `;
}
