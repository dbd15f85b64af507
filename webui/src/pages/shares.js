// Shares over SMB and NFS, and the Samba users.
import { get, post, del } from "../api.js";
import { html, usePoll, Form, Field } from "../lib.js";
import { useState } from "preact/hooks";

export function Shares() {
  const [list, error, reload] = usePoll(() => get("shares"), 0);
  const [users, , reloadUsers] = usePoll(() => get("users"), 0);
  // What the last change did beside smb.conf, and what it could not do.
  const [outcome, setOutcome] = useState(null);
  if (!list) return html`<p>${error?.message ?? "Loading…"}</p>`;
  const status = list.status ?? {};
  return html`<section>
    <h2>Shares</h2>
    <p>Samba ${status.smbd_running ? "is running" : "is not running"};
      NFS ${status.nfs_available ? "is available" : "is not available on this kernel"}.</p>
    <table id="shares"><thead><tr><th>Name</th><th>Folder</th><th>Access</th><th>NFS</th><th></th></tr></thead>
      <tbody>${list.shares.map((s) => html`<tr>
        <td>${s.name}</td><td>${s.path}</td>
        <td>${s.guest ? "guests" : (s.users.length ? s.users.join(", ") : "all users")}${s.read_only ? ", read-only" : ""}</td>
        <td>${s.nfs ? s.nfs.clients.join(", ") : "—"}</td>
        <td><button type="button" onClick=${async () => { if (confirm(`Stop sharing ${s.name}? The folder stays.`)) { await del(`shares/${encodeURIComponent(s.name)}`); reload(); } }}>Remove</button></td>
      </tr>`)}</tbody></table>
    <h3>New share</h3>
    <${Form} id="share-form" button="Share" done=${(result, form) => { form.reset(); setOutcome(result); reload(); }}
      submit=${(v) => post("shares", {
        name: v.name, path: v.path, comment: v.comment, read_only: v.read_only, guest: v.guest,
        users: v.users.split(",").map((u) => u.trim()).filter(Boolean), time_machine: v.time_machine,
        nfs: v.nfs_clients.trim() ? { clients: v.nfs_clients.split(",").map((c) => c.trim()).filter(Boolean), read_only: v.read_only } : null,
      })}>
      <${Field} label="Name" name="name" />
      <${Field} label="Folder" name="path" placeholder="/srv/data/media" />
      <${Field} label="Comment" name="comment" />
      <${Field} label="Users (comma-separated; empty: every user)" name="users" />
      <${Field} label="NFS clients (hosts or networks, comma-separated)" name="nfs_clients" placeholder="192.168.1.0/24" />
      <${Field} label="Read-only" name="read_only" type="checkbox" />
      <${Field} label="Guests may connect" name="guest" type="checkbox" />
      <${Field} label="Time Machine target" name="time_machine" type="checkbox" />
    </${Form}>
    ${outcome && html`<ul id="share-outcome">
      ${(outcome.changed ?? []).map((c) => html`<li>Changed ${c}</li>`)}
      ${(outcome.warnings ?? []).map((w) => html`<li class="error">${w}</li>`)}
    </ul>`}
    <h3>Users</h3>
    <ul id="users">${(users ?? []).map((u) => html`<li>${u.name}${u.disabled ? " (disabled)" : ""}</li>`)}</ul>
    <${Form} id="user-form" button="Add user" done=${(_, form) => { form.reset(); reloadUsers(); }}
      submit=${(v) => post("users", { username: v.username, password: v.password })}>
      <${Field} label="Username" name="username" autocomplete="off" />
      <${Field} label="Password" name="password" type="password" autocomplete="new-password" />
    </${Form}>
  </section>`;
}
