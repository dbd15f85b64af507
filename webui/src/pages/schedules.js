// Schedules with a cron editor that previews the next runs, and the job
// history.
import { get, post, del } from "../api.js";
import { html, useEffect, useState, usePoll, Form, Field, when } from "../lib.js";

const KINDS = [
  { value: "health_check", label: "Health check" },
  { value: "smart_test", label: "SMART self-test" },
  { value: "disk_benchmark", label: "Disk benchmark" },
  { value: "net_benchmark", label: "Network benchmark" },
  { value: "maintenance", label: "Store upkeep" },
];

function describe(job) {
  switch (job.kind) {
    case "smart_test": return `SMART ${job.test} test of ${job.disk}`;
    case "disk_benchmark": return `${job.preset} benchmark of ${job.disk}`;
    case "net_benchmark": return `network test to ${job.peer} (${job.time} s)`;
    default: return KINDS.find((k) => k.value === job.kind)?.label ?? job.kind;
  }
}

function CronPreview({ cron }) {
  const [preview, setPreview] = useState({ runs: [], error: null });
  useEffect(() => {
    const timer = setTimeout(async () => {
      if (!cron.trim()) return setPreview({ runs: [], error: null });
      try {
        const r = await get(`schedules/preview?cron=${encodeURIComponent(cron)}`);
        setPreview({ runs: r.next_runs, error: null });
      } catch (e) {
        setPreview({ runs: [], error: e.message });
      }
    }, 300);
    return () => clearTimeout(timer);
  }, [cron]);
  return html`<div class="preview" aria-live="polite">
    ${preview.error ? html`<span class="field-error">${preview.error}</span>`
      : html`<span>Next: ${preview.runs.map((r) => new Date(r.replace(/\[.*\]$/, "")).toLocaleString()).join(" · ") || "—"}</span>`}
  </div>`;
}

function jobOf(v) {
  switch (v.kind) {
    case "smart_test": return { kind: v.kind, disk: v.disk || "all", test: v.test };
    case "disk_benchmark": return { kind: v.kind, disk: v.disk || "all", preset: v.preset };
    case "net_benchmark": return { kind: v.kind, peer: v.peer, time: Number(v.time) || 10 };
    default: return { kind: v.kind };
  }
}

export function Schedules() {
  const [schedules, error, reload] = usePoll(() => get("schedules"), 15000);
  const [jobs, , reloadJobs] = usePoll(() => get("jobs?limit=50"), 5000);
  const [kind, setKind] = useState("health_check");
  const [cron, setCron] = useState("0 3 * * *");
  if (!schedules) return html`<p>${error?.message ?? "Loading…"}</p>`;
  return html`<section>
    <h2>Schedules</h2>
    <table id="schedules"><thead><tr><th>Name</th><th>When</th><th>Job</th><th>Next runs</th><th></th></tr></thead>
      <tbody>${schedules.map((s) => html`<tr>
        <td>${s.name}${s.enabled ? "" : " (off)"}</td><td><code>${s.cron}</code></td><td>${describe(s.job)}</td>
        <td>${s.next_runs.slice(0, 1).map((r) => new Date(r.replace(/\[.*\]$/, "")).toLocaleString())}</td>
        <td><button type="button" onClick=${async () => { await post(`schedules/${s.id}/run`); reloadJobs(); }}>Run now</button>
          <button type="button" onClick=${async () => { if (confirm(`Remove ${s.name}?`)) { await del(`schedules/${s.id}`); reload(); } }}>Remove</button></td>
      </tr>`)}</tbody></table>
    <h3>New schedule</h3>
    <${Form} id="schedule-form" button="Add schedule" done=${(_, form) => { form.reset(); reload(); }}
      submit=${(v) => post("schedules", { name: v.name, cron: v.cron, job: jobOf(v), catch_up: v.catch_up, when_busy: v.when_busy })}>
      <${Field} label="Name" name="name" />
      <${Field} label="Cron (minute hour day month weekday, or @daily)" name="cron" value=${cron} onInput=${(e) => setCron(e.currentTarget.value)} />
      <${CronPreview} cron=${cron} />
      <${Field} label="Job" name="kind" options=${KINDS} value=${kind} onChange=${(e) => setKind(e.currentTarget.value)} />
      ${kind === "smart_test" || kind === "disk_benchmark" ? html`<${Field} label="Disk (name, serial or all)" name="disk" value="all" />` : null}
      ${kind === "smart_test" ? html`<${Field} label="Test" name="test" options=${["short", "long"]} />` : null}
      ${kind === "disk_benchmark" ? html`<${Field} label="Preset" name="preset" options=${["quick", "dbench", "sbc", "kubestr"]} />` : null}
      ${kind === "net_benchmark" ? html`<${Field} label="Peer (host or host:port)" name="peer" /><${Field} label="Seconds" name="time" type="number" value="10" />` : null}
      <${Field} label="Catch up a run missed while off" name="catch_up" type="checkbox" />
      <${Field} label="When hot or busy" name="when_busy" options=${[{ value: "wait", label: "wait (up to 30 min)" }, { value: "skip", label: "skip" }]} />
    </${Form}>
    <h3>Job history</h3>
    <table id="jobs"><thead><tr><th>#</th><th>Schedule</th><th>Started</th><th>Status</th><th>Took</th><th>Message</th><th></th></tr></thead>
      <tbody>${(jobs ?? []).map((j) => html`<tr>
        <td>${j.id}</td><td>${j.schedule_name ?? "—"}</td><td>${when(j.started_at ?? j.queued_at)}</td>
        <td class=${j.status}>${j.status}</td><td>${j.duration_secs == null ? "—" : `${j.duration_secs.toFixed(0)} s`}</td><td>${j.message}</td>
        <td>${j.status === "running" || j.status === "queued" ? html`<button type="button" onClick=${async () => { await post(`jobs/${j.id}/cancel`); reloadJobs(); }}>Cancel</button>` : null}</td>
      </tr>`)}</tbody></table>
  </section>`;
}
