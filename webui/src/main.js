// The admin UI: setup and login, then one page per part of the NAS,
// reached by the hash (#/disks) so any page can be bookmarked.
import { render } from "preact";
import { get, post, whenUnauthorized } from "./api.js";
import { html, useEffect, useState, Form, Field } from "./lib.js";
import { Dashboard } from "./pages/dashboard.js";
import { Disks } from "./pages/disks.js";
import { Shares } from "./pages/shares.js";
import { Tuning } from "./pages/tuning.js";
import { Monitoring } from "./pages/monitoring.js";
import { Benchmarks } from "./pages/benchmarks.js";
import { Schedules } from "./pages/schedules.js";
import { System } from "./pages/system.js";
import "./style.css";

const pages = [
  ["", "Dashboard", Dashboard],
  ["disks", "Disks", Disks],
  ["shares", "Shares", Shares],
  ["tuning", "Tuning", Tuning],
  ["monitoring", "Monitoring", Monitoring],
  ["benchmarks", "Benchmarks", Benchmarks],
  ["schedules", "Schedules", Schedules],
  ["system", "System", System],
];

const currentPage = () => location.hash.replace(/^#\/?/, "");

function Setup({ done }) {
  return html`<section>
    <h2>Set up this NAS</h2>
    <p>There is no administrator yet, and no default password. Enter the setup
      token the daemon printed when it started (it is also in the file
      <code>setup-token</code> in its data directory), then choose the
      administrator's name and password.</p>
    <${Form} id="setup-form" button="Create administrator" submit=${(v) => post("setup", v)} done=${done}>
      <${Field} label="Setup token" name="token" autocomplete="off" />
      <${Field} label="Username" name="username" value="admin" autocomplete="username" />
      <${Field} label="Password" name="password" type="password" autocomplete="new-password" />
    </${Form}>
  </section>`;
}

function Login({ done }) {
  return html`<section>
    <h2>Log in</h2>
    <${Form} id="login-form" button="Log in" submit=${(v) => post("login", v)} done=${done}>
      <${Field} label="Username" name="username" autocomplete="username" />
      <${Field} label="Password" name="password" type="password" autocomplete="current-password" />
    </${Form}>
  </section>`;
}

function App() {
  const [state, setState] = useState({ view: "loading" });
  const [page, setPage] = useState(currentPage());
  async function route() {
    try {
      const health = await get("health");
      if (health.setup_required) return setState({ view: "setup" });
      const me = await get("session");
      setState({ view: "shell", user: me.username });
    } catch {
      setState({ view: "login" });
    }
  }
  useEffect(() => {
    whenUnauthorized(() => setState({ view: "login" }));
    route();
    const onHash = () => setPage(currentPage());
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, []);
  const header = (nav) => html`<header>
    <h1>nasd</h1>
    ${nav}
    ${state.view === "shell" ? html`<span class="who">${state.user}</span>
      <button type="button" onClick=${async () => { await post("logout"); route(); }}>Log out</button>` : null}
  </header>`;
  if (state.view === "loading") return html`<p class="loading">Loading…</p>`;
  if (state.view === "setup") return html`${header()}<main><${Setup} done=${route} /></main>`;
  if (state.view === "login") return html`${header()}<main><${Login} done=${route} /></main>`;
  const [, , Page] = pages.find(([key]) => key === page) ?? pages[0];
  const nav = html`<nav>${pages.map(([key, label]) =>
    html`<a href=${"#/" + key} aria-current=${key === page ? "page" : undefined}>${label}</a>`)}</nav>`;
  return html`${header(nav)}<main><${Page} /></main>`;
}

render(html`<${App} />`, document.getElementById("app"));
