"use strict";
// The admin UI: a setup page, a login page and a status page over the
// JSON API. Every failure is shown next to the field the API names.

const $ = (sel) => document.querySelector(sel);
const views = ["loading", "setup", "login", "status"];
let refreshTimer = null;

function show(view) {
  for (const v of views) $("#" + v).hidden = v !== view;
  $("#logout").hidden = view !== "status";
  $("#who").hidden = view !== "status";
  if (view !== "status") clearInterval(refreshTimer);
}

async function api(method, path, body) {
  const res = await fetch("/api/v1/" + path, {
    method,
    headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
    credentials: "same-origin",
  });
  const data = res.status === 204 ? null : await res.json().catch(() => null);
  return { status: res.status, ok: res.ok, data };
}

function text(tag, value) {
  const el = document.createElement(tag);
  el.textContent = value === null || value === undefined ? "—" : String(value);
  return el;
}

function fillRows(table, rows) {
  const body = $(table + " tbody");
  body.replaceChildren(...rows.map((cells) => {
    const tr = document.createElement("tr");
    tr.append(...cells.map((c) => text("td", c)));
    return tr;
  }));
}

const mhz = (khz) => (khz === null || khz === undefined ? null : Math.round(khz / 1000));
const gib = (bytes) => (bytes / 2 ** 30).toFixed(1) + " GiB";

function duration(secs) {
  const d = Math.floor(secs / 86400), h = Math.floor(secs / 3600) % 24, m = Math.floor(secs / 60) % 60;
  return `${d}d ${h}h ${m}m`;
}

function renderStatus(info) {
  $("#board").textContent = info.board.model;
  const summary = [
    ["Architecture", info.arch],
    ["Kernel", info.kernel],
    ["Uptime", info.uptime_secs === null ? null : duration(info.uptime_secs)],
    ["Load", info.load ? [info.load.one, info.load.five, info.load.fifteen].map((l) => l.toFixed(2)).join(" ") : null],
    ["Memory", info.memory ? `${gib(info.memory.available_bytes)} available of ${gib(info.memory.total_bytes)}` : null],
  ];
  $("#summary").replaceChildren(...summary.flatMap(([k, v]) => [text("dt", k), text("dd", v)]));

  const clusters = info.cpu.clusters;
  $("#clusters").hidden = clusters.length === 0;
  $("#no-clusters").hidden = clusters.length !== 0;
  fillRows("#clusters", clusters.map((c) => [
    c.policy, c.cpus.join(","), c.core_type, c.governor,
    `${mhz(c.min_khz) ?? "?"}–${mhz(c.max_khz) ?? "?"}`, mhz(c.cur_khz),
  ]));

  const temps = [
    ...info.thermal.map((z) => [z.zone, z.type, z.celsius === null ? null : z.celsius.toFixed(1)]),
    ...info.hwmon.map((s) => [`${s.chip} ${s.sensor}`, s.label ?? s.name, s.celsius.toFixed(1)]),
  ];
  $("#temps").hidden = temps.length === 0;
  $("#no-temps").hidden = temps.length !== 0;
  fillRows("#temps", temps);

  fillRows("#network", info.network.map((n) => [
    n.name, n.operstate, n.speed_mbps === null ? "unknown" : `${n.speed_mbps} Mbit/s`,
  ]));
}

async function loadStatus() {
  const res = await api("GET", "system");
  if (res.status === 401) return route();
  if (res.ok) renderStatus(res.data);
}

async function route() {
  const health = await api("GET", "health");
  if (health.ok && health.data.setup_required) return show("setup");
  const me = await api("GET", "session");
  if (!me.ok) return show("login");
  $("#who").textContent = me.data.username;
  show("status");
  await loadStatus();
  clearInterval(refreshTimer);
  refreshTimer = setInterval(loadStatus, 5000);
}

function bindForm(id, submit) {
  const form = $(id);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const values = Object.fromEntries(new FormData(form));
    for (const input of form.querySelectorAll("input")) input.removeAttribute("aria-invalid");
    form.querySelector(".error").textContent = "";
    const res = await submit(values);
    if (res.ok) return;
    form.querySelector(".error").textContent = res.data?.error ?? `request failed (${res.status})`;
    const field = res.data?.field && form.querySelector(`[name="${res.data.field}"]`);
    if (field) { field.setAttribute("aria-invalid", "true"); field.focus(); }
  });
}

bindForm("#setup-form", async (v) => {
  const res = await api("POST", "setup", v);
  if (res.ok) await route();
  return res;
});

bindForm("#login-form", async (v) => {
  const res = await api("POST", "login", v);
  if (res.ok) { $("#login-form").reset(); await route(); }
  return res;
});

bindForm("#password-form", async (v) => {
  const res = await api("POST", "password", v);
  $("#password-form .ok").textContent = res.ok ? "Password changed; other sessions were logged out." : "";
  if (res.ok) $("#password-form").reset();
  return res;
});

$("#logout").addEventListener("click", async () => {
  await api("POST", "logout");
  await route();
});

route();
