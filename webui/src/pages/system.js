// The system: host facts, name and clock, the administrator's password and
// sessions, the daemon's recent log lines, reboot and shutdown behind a
// typed confirmation.
import { get, post, put, del } from "../api.js";
import { html, usePoll, Form, Field, bytes, duration, when } from "../lib.js";

export function System() {
  const [info, error] = usePoll(() => get("system"), 10000);
  const [health] = usePoll(() => get("health"), 0);
  const [clock] = usePoll(() => get("system/clock"), 5000);
  const [sessions, , reloadSessions] = usePoll(() => get("sessions"), 0);
  const [log, , reloadLog] = usePoll(() => get("system/log?lines=100"), 0);
  const [card] = usePoll(() => get("metrics/card-writes?days=14"), 300000);
  if (!info) return html`<p>${error?.message ?? "Loading…"}</p>`;
  return html`<section>
    <h2>System</h2>
    <dl class="summary">
      <dt>Board</dt><dd>${info.board.model}</dd>
      <dt>Architecture</dt><dd>${info.arch ?? "—"}</dd>
      <dt>Kernel</dt><dd>${info.kernel ?? "—"}</dd>
      <dt>nasd</dt><dd>${health?.version ?? "—"}</dd>
      <dt>Uptime</dt><dd>${duration(info.uptime_secs)}</dd>
      <dt>Clock</dt><dd id="clock">${clock ? `${new Date(clock.unix * 1000).toLocaleString()} (${clock.time_zone})` : "—"}</dd>
      <dt>Network</dt><dd>${info.network.map((n) => `${n.name} ${n.operstate ?? ""} ${n.speed_mbps == null ? "" : n.speed_mbps + " Mbit/s"}`).join("; ")}</dd>
    </dl>
    <h3>Writes to the system disk</h3>
    <p id="card-writes">${!card ? "—" : !card.disk ? "No system disk found." : html`
      ${card.disk}: ${card.mean_bytes_per_day == null ? "not measured yet" : `${bytes(card.mean_bytes_per_day)} per day on average`}
      (over ${duration(card.measured_secs)} of sampling; an SD card wears by what is written to it).`}</p>
    ${card?.days?.length ? html`<table id="card-days"><thead><tr><th>Day</th><th>Written</th></tr></thead>
      <tbody>${card.days.slice().reverse().map((d) => html`<tr><td>${d.date}</td><td>${bytes(d.written_bytes)}</td></tr>`)}</tbody></table>` : ""}
    <h3>Name</h3>
    <${Form} id="hostname-form" button="Rename" submit=${(v) => put("system/hostname", { hostname: v.hostname })}>
      <${Field} label="Host name" name="hostname" autocomplete="off" />
    </${Form}>
    <h3>Change password</h3>
    <${Form} id="password-form" button="Change password" submit=${(v) => post("password", v)}
      done=${(_, form) => { form.reset(); reloadSessions(); }}>
      <${Field} label="Current password" name="current_password" type="password" autocomplete="current-password" />
      <${Field} label="New password" name="new_password" type="password" autocomplete="new-password" />
    </${Form}>
    <h3>Sessions</h3>
    <table id="sessions"><thead><tr><th>Session</th><th>Started</th><th>Expires</th><th></th></tr></thead>
      <tbody>${(sessions ?? []).map((s) => html`<tr><td><code>${s.id}</code>${s.current ? " (this one)" : ""}</td>
        <td>${when(s.created_at)}</td><td>${when(s.expires_at)}</td>
        <td>${s.current ? null : html`<button type="button" onClick=${async () => { await del(`sessions/${s.id}`); reloadSessions(); }}>End</button>`}</td></tr>`)}</tbody></table>
    <h3>Recent log <button type="button" onClick=${reloadLog}>Refresh</button></h3>
    <pre class="log">${(log?.lines ?? []).join("\n") || "No journal lines (nasd is not running under systemd here)."}</pre>
    <h3>Power</h3>
    <${Form} id="power-form" button="Do it" submit=${(v) => post("system/power", { action: v.action, confirm: v.confirm })}
      done=${() => alert("The machine is going down.")}>
      <${Field} label="Action" name="action" options=${["reboot", "shutdown"]} />
      <${Field} label="Type the action again to confirm" name="confirm" autocomplete="off" />
    </${Form}>
  </section>`;
}
