// Disks with SMART health badges, mount with the options preview (each
// option's reason), format behind the guard, spindown.
import { get, post, put } from "../api.js";
import { html, useEffect, useState, usePoll, Form, Field, bytes } from "../lib.js";

function Health({ name }) {
  const [smart, setSmart] = useState(null);
  useEffect(() => { get(`disks/${name}/smart`).then(setSmart).catch((e) => setSmart({ state: "error", message: e.message })); }, [name]);
  if (!smart) return html`<span class="badge">…</span>`;
  if (smart.state === "standby") return html`<span class="badge idle" title="spun down; left asleep">asleep</span>`;
  if (smart.state !== "read") return html`<span class="badge" title=${smart.message ?? ""}>no SMART</span>`;
  const bad = smart.passed === false || (smart.counters && Object.values(smart.counters).some((v) => v > 0));
  return html`<details class="smart"><summary class=${"badge " + (smart.passed === false ? "bad" : bad ? "warn" : "good")}>
    ${smart.passed === false ? "FAILING" : bad ? "check" : "healthy"}${smart.temperature_celsius != null ? ` ${smart.temperature_celsius} °C` : ""}</summary>
    <dl class="summary">
      <dt>Power-on hours</dt><dd>${smart.power_on_hours ?? "—"}</dd>
      <dt>Last self-test</dt><dd>${smart.last_self_test ?? "—"}${smart.self_test_remaining_percent != null ? ` (running, ${smart.self_test_remaining_percent} % left)` : ""}</dd>
      ${Object.entries(smart.counters ?? {}).map(([k, v]) => html`<dt>${k.replaceAll("_", " ")}</dt><dd>${v}</dd>`)}
      <dt>Read as</dt><dd>${smart.device_type ?? "—"}</dd>
    </dl></details>`;
}

function Mount({ volume, done }) {
  const [plan, setPlan] = useState(null);
  useEffect(() => { post(`disks/${volume.name}/mount/preview`).then(setPlan).catch((e) => setPlan({ error: e.message })); }, [volume.name]);
  return html`<div class="mount">
    ${plan?.error ? html`<p class="error">${plan.error}</p>` : plan ? html`<ul class="options">
      ${plan.options.map((o) => html`<li><code>${o.option}</code>: ${o.reason}</li>`)}
      ${plan.notes.map((n) => html`<li>${n}</li>`)}</ul>` : null}
    <${Form} id=${"mount-" + volume.name} button="Mount" submit=${() => post(`disks/${volume.name}/mount`, {})} done=${done} />
  </div>`;
}

function Format({ disk, done }) {
  const [, kind] = [null, disk.transport === "loop" ? "backing file path" : "serial number"];
  return html`<details><summary>Format ${disk.name}…</summary>
    <p>Formatting erases everything on ${disk.name}. If it holds anything, repeat its ${kind} to confirm.</p>
    <${Form} id=${"format-" + disk.name} button="Format" submit=${(v) => post(`disks/${disk.name}/format`, { fs: v.fs, label: v.label, confirm: v.confirm || null })} done=${done}>
      <${Field} label="Filesystem" name="fs" options=${["ext4", "xfs", "btrfs", "exfat", "ntfs"]} />
      <${Field} label="Label" name="label" />
      <${Field} label=${`Confirm (${kind})`} name="confirm" autocomplete="off" />
    </${Form}></details>`;
}

function Spindown({ disk }) {
  return html`<details><summary>Spindown…</summary>
    <${Form} id=${"power-" + disk.name} button="Apply" submit=${(v) => put(`disks/${disk.name}/power`, { spindown_minutes: v.spindown_minutes, apm: v.apm })}>
      <${Field} label="Minutes idle before spinning down (0: never)" name="spindown_minutes" type="number" value=${disk.power?.spindown_minutes ?? ""} />
      <${Field} label="APM level (1-255)" name="apm" type="number" value=${disk.power?.apm ?? ""} />
    </${Form}></details>`;
}

export function Disks() {
  const [list, error, reload] = usePoll(() => get("disks"), 15000);
  if (!list) return html`<p>${error?.message ?? "Loading…"}</p>`;
  return html`<section>
    <h2>Disks</h2>
    ${list.missing_mounts.length ? html`<p class="warn">Missing: ${list.missing_mounts.map((m) => m.mountpoint).join(", ")}</p>` : null}
    ${list.disks.map((d) => html`<article class="disk" id=${"disk-" + d.name}>
      <h3>${d.name}: ${d.model ?? d.transport} <small>${bytes(d.size_bytes)}</small> <${Health} name=${d.name} />
        ${d.system ? html`<span class="badge">system</span>` : null}
        ${d.usb_degraded ? html`<span class="badge warn">USB 2 speed</span>` : null}</h3>
      <table><thead><tr><th>Volume</th><th>Filesystem</th><th>Mounted at</th><th>Used</th><th></th></tr></thead>
        <tbody>${[d, ...d.partitions].map((v) => html`<tr>
          <td>${v.name}</td><td>${v.fs ? `${v.fs.type}${v.fs.label ? ` "${v.fs.label}"` : ""}` : "—"}</td>
          <td>${v.mountpoint ?? "—"}</td><td>${v.usage ? `${bytes(v.usage.used_bytes)} of ${bytes(v.usage.total_bytes)}` : "—"}</td>
          <td>${v.fs && !v.mountpoint && !d.system ? html`<${Mount} volume=${v} done=${reload} />`
            : v.mountpoint && !d.system ? html`<button type="button" onClick=${async () => { await post(`disks/${v.name}/unmount`, { force: false }); reload(); }}>Unmount</button>` : null}</td>
        </tr>`)}</tbody></table>
      ${d.system ? null : html`<${Format} disk=${d} done=${reload} />`}
      ${d.rotational ? html`<${Spindown} disk=${d} />` : null}
    </article>`)}
  </section>`;
}
