// Per-cluster governor and presets with their sources, the tunables,
// before/after values, and drift events.
import { get, put } from "../api.js";
import { html, useState, usePoll, Form, Field, mhz, when } from "../lib.js";

export function Tuning() {
  const [state, error, reload] = usePoll(() => get("tuning"), 10000);
  const [events] = usePoll(() => get("tuning/events"), 10000);
  const [changes, setChanges] = useState(null);
  if (!state) return html`<p>${error?.message ?? "Loading…"}</p>`;
  const applied = (result) => { setChanges(result.changes ?? []); reload(); };
  return html`<section>
    <h2>Tuning</h2>
    <h3>Presets</h3>
    <ul class="presets">${state.presets.map((p) => html`<li>
      <b>${p.name}</b> (${p.governor}): ${p.reason} <small>Source: ${p.source}</small>
      <button type="button" onClick=${async () => applied(await put("tuning", { preset: p.name }))}>Apply</button></li>`)}</ul>
    <h3>Clusters</h3>
    ${state.clusters.map((c) => html`<article class="cluster" id=${"cluster-" + c.policy}>
      <h4>${c.policy} (CPUs ${c.cpus.join(",")}${c.core_type ? `, ${c.core_type}` : ""}): ${mhz(c.cur_khz)} MHz now</h4>
      <p>${Object.entries(c.tunables).map(([k, v]) => `${k} = ${v}`).join(", ") || "no tunables"}</p>
      <${Form} id=${"tune-" + c.policy} button="Apply" done=${applied}
        submit=${(v) => put("tuning", {
          cluster: c.policy, governor: v.governor,
          min_khz: v.min_mhz ? v.min_mhz * 1000 : null, max_khz: v.max_mhz ? v.max_mhz * 1000 : null,
          tunables: Object.fromEntries(Object.keys(c.tunables).filter((k) => v[k] != null && v[k] !== Number(c.tunables[k])).map((k) => [k, v[k]])),
        })}>
        <${Field} label="Governor" name="governor" options=${c.available_governors} value=${c.governor} />
        <${Field} label="Lowest MHz" name="min_mhz" type="number" value=${c.min_khz ? c.min_khz / 1000 : ""} />
        <${Field} label="Highest MHz" name="max_mhz" type="number" value=${c.max_khz ? c.max_khz / 1000 : ""} />
        ${Object.entries(c.tunables).filter(([, v]) => /^\d+$/.test(v)).map(([k, v]) =>
          html`<${Field} label=${k} name=${k} type="number" value=${v} />`)}
      </${Form}>
    </article>`)}
    ${changes ? html`<h3>Last change</h3><ul id="changes">${changes.length ? changes.map((ch) =>
      html`<li>${typeof ch.knob === "string" ? ch.knob : JSON.stringify(ch.knob)}: ${ch.from ?? "?"} → ${ch.to}</li>`) : html`<li>nothing to change</li>`}</ul>` : null}
    <h3>Disk queues</h3>
    ${state.disks.map((d) => html`<details class="queue"><summary>${d.disk}: read-ahead ${d.read_ahead_kb ?? "?"} KiB, ${d.scheduler ?? "?"}</summary>
      <${Form} id=${"queue-" + d.disk} button="Apply" done=${applied}
        submit=${(v) => put("tuning", { disk: d.disk, read_ahead_kb: v.read_ahead_kb, scheduler: v.scheduler })}>
        <${Field} label="Read-ahead (KiB)" name="read_ahead_kb" type="number" value=${d.read_ahead_kb ?? ""} />
        <${Field} label="I/O scheduler" name="scheduler" options=${d.available_schedulers} value=${d.scheduler} />
      </${Form}></details>`)}
    <h3>Drift and changes</h3>
    <ul class="events">${(events ?? []).slice(0, 20).map((e) => html`<li><time>${when(e.at)}</time> ${e.message}</li>`)}</ul>
  </section>`;
}
