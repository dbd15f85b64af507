// The system: host facts, the administrator's password.
import { get, post } from "../api.js";
import { html, usePoll, Form, Field, duration } from "../lib.js";

export function System() {
  const [info, error] = usePoll(() => get("system"), 10000);
  const [health] = usePoll(() => get("health"), 0);
  if (!info) return html`<p>${error?.message ?? "Loading…"}</p>`;
  return html`<section>
    <h2>System</h2>
    <dl class="summary">
      <dt>Board</dt><dd>${info.board.model}</dd>
      <dt>Architecture</dt><dd>${info.arch ?? "—"}</dd>
      <dt>Kernel</dt><dd>${info.kernel ?? "—"}</dd>
      <dt>nasd</dt><dd>${health?.version ?? "—"}</dd>
      <dt>Uptime</dt><dd>${duration(info.uptime_secs)}</dd>
      <dt>Time here</dt><dd>${new Date().toString()}</dd>
      <dt>Network</dt><dd>${info.network.map((n) => `${n.name} ${n.operstate ?? ""} ${n.speed_mbps == null ? "" : n.speed_mbps + " Mbit/s"}`).join("; ")}</dd>
    </dl>
    <h3>Change password</h3>
    <${Form} id="password-form" button="Change password" submit=${(v) => post("password", v)}
      done=${(_, form) => { form.reset(); alert("Password changed; other sessions were logged out."); }}>
      <${Field} label="Current password" name="current_password" type="password" autocomplete="current-password" />
      <${Field} label="New password" name="new_password" type="password" autocomplete="new-password" />
    </${Form}>
  </section>`;
}
