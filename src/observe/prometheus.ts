/**
 * @module Counters and histograms keyed by label values, rendered in the Prometheus text exposition format
 * (version 0.0.4). Callers choose label values from bounded sets; this module only escapes them.
 */

/** Label name -> value. */
export type Labels = Record<string, string>;

/** A monotonically increasing count per label set. */
export interface Counter {
  inc(labels: Labels, by?: number): void;
}

/** A distribution of observations per label set, in cumulative buckets. */
export interface Histogram {
  observe(labels: Labels, value: number): void;
}

interface Family {
  name: string;
  help: string;
  type: "counter" | "gauge" | "histogram";
  /** Sample lines, rendered on demand. */
  samples(): string[];
}

/** A set of metric families that renders as one exposition page. */
export interface Registry {
  counter(name: string, help: string): Counter;
  histogram(name: string, help: string, buckets: readonly number[]): Histogram;
  /** A gauge whose values are read at scrape time. */
  gauge(name: string, help: string, read: () => Array<[Labels, number]>): void;
  /** A family of either type whose values are kept elsewhere and read at scrape time. */
  collect(name: string, help: string, type: "counter" | "gauge", read: () => Array<[Labels, number]>): void;
  render(): string;
}

/** Escapes a label value: backslash, double quote and newline. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([key, value]) => `${key}="${escapeLabelValue(value)}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
}

function numberText(value: number): string {
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return Number.isNaN(value) ? "NaN" : String(value);
}

/** Label sets are kept by their rendered text, which is also a stable map key. */
function keyOf(labels: Labels): string {
  return labelText(labels);
}

/**
 * Rendering a label set escapes every value, which costs more than the count itself on the request path; label
 * values come from bounded sets, so each family remembers the text per combination of raw values.
 */
function keyCache(): (labels: Labels) => string {
  const rendered = new Map<string, string>();
  return (labels) => {
    const raw = Object.values(labels).join("\u0001");
    let key = rendered.get(raw);
    if (key === undefined) rendered.set(raw, key = keyOf(labels));
    return key;
  };
}

/** Creates an empty registry; each app owns one, so tests and instances never share counts. */
export function createRegistry(): Registry {
  const families: Family[] = [];
  function collect(name: string, help: string, type: Family["type"], read: () => Array<[Labels, number]>): void {
    families.push({
      name,
      help,
      type,
      samples: () => read().map(([labels, value]) => `${name}${labelText(labels)} ${numberText(value)}`),
    });
  }
  return {
    counter(name, help) {
      const values = new Map<string, number>();
      const keyFor = keyCache();
      families.push({
        name,
        help,
        type: "counter",
        samples: () => [...values].map(([key, value]) => `${name}${key} ${numberText(value)}`),
      });
      return {
        inc(labels, by = 1) {
          const key = keyFor(labels);
          values.set(key, (values.get(key) ?? 0) + by);
        },
      };
    },
    histogram(name, help, buckets) {
      const series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();
      const keyFor = keyCache();
      families.push({
        name,
        help,
        type: "histogram",
        samples: () =>
          [...series.values()].flatMap(({ labels, counts, sum, count }) => [
            ...buckets.map((le, i) => `${name}_bucket${labelText({ ...labels, le: numberText(le) })} ${counts[i]}`),
            `${name}_bucket${labelText({ ...labels, le: "+Inf" })} ${count}`,
            `${name}_sum${labelText(labels)} ${numberText(sum)}`,
            `${name}_count${labelText(labels)} ${count}`,
          ]),
      });
      return {
        observe(labels, value) {
          const key = keyFor(labels);
          let entry = series.get(key);
          if (!entry) series.set(key, entry = { labels, counts: buckets.map(() => 0), sum: 0, count: 0 });
          for (let i = 0; i < buckets.length; i++) if (value <= buckets[i]) entry.counts[i]++;
          entry.sum += value;
          entry.count++;
        },
      };
    },
    gauge: (name, help, read) => collect(name, help, "gauge", read),
    collect,
    render() {
      return families.map((family) =>
        [`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} ${family.type}`, ...family.samples()]
          .join("\n")
      ).join("\n") + "\n";
    },
  };
}
