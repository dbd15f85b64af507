// Disk benchmarks: run a preset with live progress and cancel, the
// history with a chart per disk, two runs compared, dbench's summary.
import { get, post } from "../api.js";
import { html, useState, usePoll, Form, Field, Chart, when } from "../lib.js";

const PRESETS = [
  { value: "quick", label: "quick (about 30 s)" },
  { value: "dbench", label: "dbench (9 tests, about 3 min)" },
  { value: "sbc", label: "SBC storage score (about a minute)" },
  { value: "kubestr", label: "kubestr (4 fio profiles, about 8 min)" },
];

function headline(run) {
  const job = run.results[0];
  const d = job?.read ?? job?.write;
  return d ? `${job.job}: ${Math.round(d.iops)} IOPS, ${d.bw_mib_per_s.toFixed(1)} MiB/s` : "";
}

function Progress({ run, cancelled }) {
  const p = run.progress;
  return html`<div class="running" id=${"run-" + run.id}>
    <p>Run #${run.id} (${run.preset ?? "job file"} on ${run.target}):
      ${p ? `job ${p.job_index}/${p.jobs} ${p.job}` : "starting"}</p>
    <progress max="1" value=${p?.fraction ?? 0}>${Math.round((p?.fraction ?? 0) * 100)} %</progress>
    <button type="button" onClick=${async () => { await post(`bench/runs/${run.id}/cancel`); cancelled(); }}>Cancel</button>
  </div>`;
}

function Results({ run }) {
  return html`<div class="results">
    <h3>Run #${run.id}: ${run.status}${run.error ? ` (${run.error})` : ""}</h3>
    <table><thead><tr><th>Job</th><th>Dir</th><th>IOPS</th><th>MiB/s</th><th>MB/s</th><th>p50 µs</th><th>p99 µs</th></tr></thead>
      <tbody>${run.results.flatMap((r) => ["read", "write"].filter((d) => r[d]).map((d) => html`<tr>
        <td>${r.job}</td><td>${d}</td><td>${Math.round(r[d].iops)}</td><td>${r[d].bw_mib_per_s.toFixed(1)}</td>
        <td>${r[d].bw_mb_per_s.toFixed(1)}</td><td>${r[d].lat_us.p50.toFixed(0)}</td><td>${r[d].lat_us.p99.toFixed(0)}</td></tr>`))}</tbody></table>
    ${run.summary ? html`<pre class="summary">${run.summary}</pre>` : null}
    ${run.baseline ? html`<p>Baseline: median of runs ${run.baseline.runs.map((i) => "#" + i).join(", ")}:
      ${run.baseline.regression ? html`<b class="bad">slower by more than ${run.baseline.threshold_percent} %</b>` : "no regression"}</p>` : null}
  </div>`;
}

function Compare({ a, b }) {
  const [cmp, error] = usePoll(() => get(`bench/compare?a=${a}&b=${b}`), 0, [a, b]);
  if (!cmp) return html`<p>${error?.message ?? "Comparing…"}</p>`;
  const ratio = (r) => (r.ratio == null ? "—" : `${r.ratio.toFixed(2)}×`);
  return html`<div id="compare"><h3>#${a} → #${b} (B / A)</h3>
    <table><thead><tr><th>Job</th><th>Dir</th><th>IOPS</th><th>MiB/s</th><th>p50</th><th>p99</th></tr></thead>
    <tbody>${cmp.jobs.flatMap((j) => ["read", "write"].filter((d) => j[d]).map((d) => html`<tr><td>${j.job}</td><td>${d}</td>
      <td>${Math.round(j[d].iops.a)} → ${Math.round(j[d].iops.b)} (${ratio(j[d].iops)})</td>
      <td>${ratio(j[d].bw_bytes_per_s)}</td><td>${ratio(j[d].lat_us_p50)}</td><td>${ratio(j[d].lat_us_p99)}</td></tr>`))}</tbody></table>
    ${cmp.context_changes.length ? html`<ul>${cmp.context_changes.map((c) => html`<li>${c}</li>`)}</ul>` : html`<p>Same context.</p>`}
  </div>`;
}

export function Benchmarks() {
  const [runs, , reload] = usePoll(() => get("bench/runs"), 1000);
  const [disks] = usePoll(() => get("disks"), 0);
  const [picked, setPicked] = useState([]);
  const [shown, setShown] = useState(null);
  const targets = (disks?.disks ?? []).filter((d) => !d.system).flatMap((d) => [d, ...d.partitions])
    .filter((v) => v.mountpoint).map((v) => ({ value: v.mountpoint, label: `${v.mountpoint} (${v.name})` }));
  const running = (runs ?? []).filter((r) => r.status === "running");
  const done = (runs ?? []).filter((r) => r.status !== "running");
  const byDisk = {};
  for (const r of [...done].reverse().filter((r) => r.status === "done" && r.results[0])) {
    const key = `${r.disk} · ${r.preset ?? "job file"}`;
    const d = r.results[0].read ?? r.results[0].write;
    (byDisk[key] ??= [[], []]);
    byDisk[key][0].push(r.started_at);
    byDisk[key][1].push(d.iops);
  }
  const toggle = (id) => setPicked((p) => (p.includes(id) ? p.filter((x) => x !== id) : [...p.slice(-1), id]));
  const detail = shown && (runs ?? []).find((r) => r.id === shown);
  return html`<section>
    <h2>Benchmarks</h2>
    <${Form} id="bench-form" button="Run" submit=${(v) => post("bench/disk", { preset: v.preset, target: v.target })}
      done=${(run) => { setShown(run.id); reload(); }}>
      <${Field} label="Preset" name="preset" options=${PRESETS} value="quick" />
      ${targets.length ? html`<${Field} label="Disk" name="target" options=${targets} />`
        : html`<${Field} label="Directory" name="target" placeholder="/srv/data" />`}
    </${Form}>
    ${running.map((r) => html`<${Progress} run=${r} cancelled=${reload} />`)}
    ${detail && detail.status !== "running" ? html`<${Results} run=${detail} />` : null}
    <div class="grid">${Object.entries(byDisk).map(([key, [t, iops]]) =>
      html`<${Chart} title=${`${key}: first job IOPS`} data=${[t, iops]} series=${["IOPS"]} height=${150} />`)}</div>
    <h3>History</h3>
    <table id="runs"><thead><tr><th>Compare</th><th>#</th><th>When</th><th>Preset</th><th>Disk</th><th>Status</th><th>Result</th></tr></thead>
      <tbody>${done.map((r) => html`<tr>
        <td><input type="checkbox" aria-label=${"compare run " + r.id} checked=${picked.includes(r.id)} onChange=${() => toggle(r.id)} /></td>
        <td><a href="#/benchmarks" onClick=${() => setShown(r.id)}>${r.id}</a></td><td>${when(r.started_at)}</td>
        <td>${r.preset ?? "job file"}</td><td>${r.disk}</td><td class=${r.status}>${r.status}${r.baseline?.regression ? " ⚠" : ""}</td>
        <td>${headline(r)}</td></tr>`)}</tbody></table>
    ${picked.length === 2 ? html`<${Compare} a=${Math.min(...picked)} b=${Math.max(...picked)} />` : html`<p>Tick two runs to compare them.</p>`}
  </section>`;
}
