// Board, uptime, live frequency per cluster and every temperature, disk
// fill, recent events.
import { get } from "../api.js";
import { html, useEffect, useRef, useState, usePoll, Chart, mhz, bytes, duration, when } from "../lib.js";

const LIVE_POINTS = 90;

export function Dashboard() {
  const [info, error] = usePoll(() => get("system"), 2000);
  const [disks] = usePoll(() => get("disks"), 10000);
  const [events] = usePoll(() => get("events"), 10000);
  // The last minutes of frequency and temperature, sampled as we poll.
  const history = useRef({ t: [], freq: {}, temp: {} });
  const [, redraw] = useState(0);
  useEffect(() => {
    if (!info) return;
    const hist = history.current;
    hist.t.push(Date.now() / 1000);
    for (const c of info.cpu.clusters) (hist.freq[c.policy] ??= []).push(c.cur_khz == null ? null : c.cur_khz / 1000);
    for (const z of info.thermal) (hist.temp[z.zone] ??= []).push(z.celsius);
    if (hist.t.length > LIVE_POINTS) {
      hist.t.shift();
      Object.values(hist.freq).forEach((s) => s.shift());
      Object.values(hist.temp).forEach((s) => s.shift());
    }
    redraw((n) => n + 1);
  }, [info]);
  if (!info) return html`<p>${error ? error.message : "Loading…"}</p>`;
  const hist = history.current;
  const policies = Object.keys(hist.freq);
  const zones = Object.keys(hist.temp);
  return html`<section>
    <h2>${info.board.model}</h2>
    <dl class="summary">
      <dt>Kernel</dt><dd>${info.kernel ?? "—"}</dd>
      <dt>Uptime</dt><dd>${duration(info.uptime_secs)}</dd>
      <dt>Load</dt><dd>${info.load ? [info.load.one, info.load.five, info.load.fifteen].map((l) => l.toFixed(2)).join(" ") : "—"}</dd>
      <dt>Memory</dt><dd>${info.memory ? `${bytes(info.memory.available_bytes)} available of ${bytes(info.memory.total_bytes)}` : "—"}</dd>
    </dl>
    <div class="grid">
      ${policies.length ? html`<${Chart} title="CPU frequency (MHz), live" data=${[hist.t, ...policies.map((p) => hist.freq[p])]} series=${policies} height=${160} />` : null}
      ${zones.length ? html`<${Chart} title="Temperatures (°C), live" data=${[hist.t, ...zones.map((z) => hist.temp[z])]} series=${zones} height=${160} />` : null}
    </div>
    <h3>CPU clusters</h3>
    ${info.cpu.clusters.length === 0 ? html`<p>This kernel has no cpufreq.</p>` : html`<table id="clusters">
      <thead><tr><th>Policy</th><th>CPUs</th><th>Cores</th><th>Governor</th><th>Range (MHz)</th><th>Now (MHz)</th></tr></thead>
      <tbody>${info.cpu.clusters.map((c) => html`<tr>
        <td>${c.policy}</td><td>${c.cpus.join(",")}</td><td>${c.core_type ?? "—"}</td><td>${c.governor ?? "—"}</td>
        <td>${mhz(c.min_khz)}–${mhz(c.max_khz)}</td><td>${mhz(c.cur_khz)}</td></tr>`)}</tbody></table>`}
    <h3>Temperatures</h3>
    <table id="temps"><thead><tr><th>Sensor</th><th>Type</th><th>°C</th><th>Trip points</th></tr></thead>
      <tbody>${info.thermal.map((z) => html`<tr><td>${z.zone}</td><td>${z.type ?? "—"}</td>
        <td>${z.celsius?.toFixed(1) ?? "—"}</td><td>${z.trips.map((t) => `${t.kind} ${t.celsius}`).join(", ")}</td></tr>`)}
      ${info.hwmon.map((s) => html`<tr><td>${s.chip} ${s.sensor}</td><td>${s.label ?? s.name ?? "—"}</td><td>${s.celsius.toFixed(1)}</td><td></td></tr>`)}</tbody></table>
    <h3>Disks</h3>
    <table id="fill"><thead><tr><th>Filesystem</th><th>Mounted at</th><th>Used</th></tr></thead>
      <tbody>${(disks?.disks ?? []).flatMap((d) => [d, ...d.partitions]).filter((v) => v.mountpoint && v.usage).map((v) => {
        const ratio = v.usage.used_bytes / Math.max(1, v.usage.total_bytes);
        return html`<tr><td>${v.name} (${v.fs?.type ?? "?"})</td><td>${v.mountpoint}</td>
          <td><meter min="0" max="1" high="0.9" value=${ratio}></meter> ${bytes(v.usage.used_bytes)} of ${bytes(v.usage.total_bytes)}</td></tr>`;
      })}</tbody></table>
    <h3>Recent events</h3>
    <ul class="events">${(events ?? []).slice(0, 10).map((e) => html`<li class=${e.severity}>
      <time>${when(e.at)}</time> <b>${e.source}</b> ${e.message}</li>`)}</ul>
  </section>`;
}
