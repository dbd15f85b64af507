// Time series from the daemon's store: frequency per cluster, time at each
// frequency, temperatures, CPU, load, memory, disk I/O and network, over
// 1 hour to 1 year; drag across a chart to zoom.
import { get } from "../api.js";
import { html, useEffect, useState, usePoll, Chart, bytes } from "../lib.js";

const RANGES = [["1 h", 3600], ["1 day", 86400], ["1 week", 7 * 86400], ["1 month", 30 * 86400], ["1 year", 365 * 86400]];
const GROUPS = [
  ["CPU frequency (MHz)", "cpu_frequency_hertz", (v) => (v / 1e6).toFixed(0)],
  ["Time at each frequency", "cpu_time_at_frequency_ratio", (v) => `${(v * 100).toFixed(0)} %`],
  ["Temperatures (°C)", "temperature_celsius", (v) => v.toFixed(1)],
  ["CPU use", "cpu_utilisation_ratio", (v) => `${(v * 100).toFixed(0)} %`],
  ["Load", "load", (v) => v.toFixed(2)],
  ["Memory available", "memory_available_bytes", bytes],
  ["Disk reads", "disk_read_bytes_per_second", (v) => `${bytes(v)}/s`],
  ["Disk writes", "disk_write_bytes_per_second", (v) => `${bytes(v)}/s`],
  ["Network received", "network_receive_bytes_per_second", (v) => `${bytes(v)}/s`],
  ["Network sent", "network_transmit_bytes_per_second", (v) => `${bytes(v)}/s`],
];

/** `name{a="x",b="y"}` -> `x y`: the labels are what tells series apart. */
const shortName = (key) => (key.match(/"([^"]*)"/g) ?? [key]).map((s) => s.replaceAll('"', "")).join(" ");

/** Columns of several series on one shared time axis. */
function align(columns) {
  const times = [...new Set(columns.flatMap((c) => c.t))].sort((a, b) => a - b);
  const index = new Map(times.map((t, i) => [t, i]));
  const ys = columns.map((c) => {
    const y = new Array(times.length).fill(null);
    c.t.forEach((t, i) => { y[index.get(t)] = c.avg[i]; });
    return y;
  });
  return [times, ...ys];
}

function Group({ title, name, format, keys, span }) {
  const [data, setData] = useState(null);
  useEffect(() => {
    let live = true;
    const load = () => {
      const to = Math.floor(Date.now() / 1000);
      Promise.all(keys.map((k) => get(`metrics/query?series=${encodeURIComponent(k)}&from=${to - span}&to=${to}&points=800`)))
        .then((cols) => live && setData(align(cols)))
        .catch(() => live && setData(null));
    };
    load();
    // The shortest range follows along; longer ones change too slowly to.
    const timer = span <= 3600 ? setInterval(load, 5000) : null;
    return () => { live = false; clearInterval(timer); };
  }, [keys.join("|"), span]);
  if (!data) return html`<p>${title}: loading…</p>`;
  return html`<${Chart} title=${title} data=${data} series=${keys.map(shortName)} yFormat=${format} />`;
}

export function Monitoring() {
  const [span, setSpan] = useState(3600);
  const [series, error] = usePoll(() => get("metrics/series"), 30000);
  if (!series) return html`<p>${error ? error.message : "Loading…"}</p>`;
  return html`<section>
    <h2>Monitoring</h2>
    <p class="ranges" role="group" aria-label="Range">${RANGES.map(([label, secs]) =>
      html`<button type="button" aria-pressed=${span === secs} onClick=${() => setSpan(secs)}>${label}</button>`)}</p>
    <div class="grid">
      ${GROUPS.map(([title, name, format]) => {
        const keys = series.filter((k) => k === name || k.startsWith(name + "{"));
        return keys.length ? html`<${Group} key=${name + span} title=${title} name=${name} format=${format} keys=${keys} span=${span} />` : null;
      })}
    </div>
  </section>`;
}
