// The admin UI in real headless Chromium against the real nasd binary on a
// loopback port, reading a copy of the HC4 fixture tree whose values the
// tests change (the board is not here; see tests/fixtures/README.md). Run by
// `make test-browser` after the build. Screenshots of every page go to
// target/browser/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, existsSync, writeFileSync, mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium } from "playwright-core";

const repo = resolve(import.meta.dirname, "../..");
const nasdBin = process.env.NASD_BIN ?? join(repo, "target/debug/nasd");
const shots = join(repo, "target/browser");
const password = "correct horse battery";

let daemon, browser, page, base, dataDir, root;

function freePort() {
  return new Promise((ok) => {
    const srv = createServer().listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

async function waitForHealth(url) {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(url + "/api/v1/health")).ok) return;
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("nasd did not answer within 10 s");
}

before(async () => {
  const dir = mkdtempSync(join(tmpdir(), "nasd-ui-"));
  dataDir = join(dir, "state");
  root = join(dir, "root");
  execFileSync("cp", ["-a", join(repo, "tests/fixtures/odroid-hc4"), root]);
  mkdirSync(shots, { recursive: true });
  // Sampled every second and stored at once, so charts fill quickly.
  writeFileSync(join(dir, "nasd.toml"), "sample_interval_secs = 1\ncommit_interval_secs = 0\niperf3_port = 0\n");
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  daemon = spawn(nasdBin, [
    "--config", join(dir, "nasd.toml"),
    "--root", root,
    "serve", "--listen", `127.0.0.1:${port}`, "--data-dir", dataDir,
  ], { stdio: "ignore" });
  await waitForHealth(base);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  page = await browser.newPage();
  page.setDefaultTimeout(10_000);
});

after(async () => {
  await browser?.close();
  daemon?.kill();
});

test("first visit asks for the setup token and a wrong one is refused", async () => {
  await page.goto(base + "/");
  await page.getByRole("heading", { name: "Set up this NAS" }).waitFor();
  const form = page.locator("#setup-form");
  await form.getByLabel("Setup token").fill("f".repeat(64));
  await form.getByLabel("Password").fill(password);
  await form.getByRole("button", { name: "Create administrator" }).click();
  await form.locator(".error").filter({ hasText: "setup token is wrong" }).waitFor();
  assert.equal(await form.getByLabel("Setup token").getAttribute("aria-invalid"), "true");
});

test("setup with the token creates the admin and shows the status page", async () => {
  const token = readFileSync(join(dataDir, "setup-token"), "utf8").trim();
  const form = page.locator("#setup-form");
  await form.getByLabel("Setup token").fill(token);
  await form.getByRole("button", { name: "Create administrator" }).click();
  await page.getByRole("heading", { name: "Hardkernel ODROID-HC4" }).waitFor();
  const rows = page.locator("#clusters tbody tr");
  assert.equal(await rows.count(), 1);
  assert.match(await rows.first().innerText(), /policy0\s+0,1,2,3\s+Cortex-A55\s+schedutil\s+100–1908/);
  assert.match(await page.locator("#temps").innerText(), /ddr-thermal/);
  assert.equal(existsSync(join(dataDir, "setup-token")), false, "token burned");
  await page.screenshot({ path: join(shots, "status.png"), fullPage: true });
});

test("the session cookie is HttpOnly and strict", async () => {
  const cookies = await page.context().cookies();
  const session = cookies.find((c) => c.name === "nasd_session");
  assert.ok(session, "session cookie set");
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, "Strict");
  assert.equal(await page.evaluate(() => document.cookie), "", "not readable from scripts");
});

test("logout returns to the login page and login brings the status back", async () => {
  await page.getByRole("button", { name: "Log out" }).click();
  await page.getByRole("heading", { name: "Log in" }).waitFor();
  await page.reload();
  await page.getByRole("heading", { name: "Log in" }).waitFor();
  const form = page.locator("#login-form");
  await form.getByLabel("Username").fill("admin");
  await form.getByLabel("Password").fill("wrong password");
  await form.getByRole("button", { name: "Log in" }).click();
  await form.locator(".error").filter({ hasText: "wrong username or password" }).waitFor();
  const cookies = await page.context().cookies();
  assert.equal(cookies.find((c) => c.name === "nasd_session"), undefined, "a wrong password gives no session");
  await form.getByLabel("Password").fill(password);
  await form.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("heading", { name: "Hardkernel ODROID-HC4" }).waitFor();
});

test("the dashboard draws live charts with data points", async () => {
  await page.goto(base + "/#/");
  const chart = page.locator("figure.chart", { hasText: "CPU frequency (MHz), live" });
  await chart.waitFor();
  await page.waitForFunction(
    (el) => Number(el.dataset.points) >= 3, await chart.elementHandle(), { timeout: 15_000 });
  assert.ok(await chart.locator("canvas").count() >= 1, "uPlot drew a canvas");
  await page.screenshot({ path: join(shots, "dashboard.png"), fullPage: true });
});

test("a frequency change in the board shows on the monitoring page", async () => {
  writeFileSync(join(root, "sys/devices/system/cpu/cpufreq/policy0/scaling_cur_freq"), "1200000\n");
  await page.goto(base + "/#/monitoring");
  const chart = page.locator("figure.chart", { hasText: "CPU frequency (MHz)" });
  await chart.waitFor();
  await page.waitForFunction(
    (el) => JSON.parse(el.dataset.last ?? "[]").includes(1200000000),
    await chart.elementHandle(), { timeout: 20_000 });
  await page.screenshot({ path: join(shots, "monitoring.png"), fullPage: true });
});

test("a share name with a bracket shows the API's error beside the field", async () => {
  await page.goto(base + "/#/shares");
  const form = page.locator("#share-form");
  await form.getByLabel("Name").fill("media[1]");
  await form.getByLabel("Folder").fill("/srv/data/media");
  await form.getByRole("button", { name: "Share" }).click();
  const name = form.getByLabel("Name");
  await form.locator('label:has(input[name="name"]) .field-error')
    .filter({ hasText: "must be 1 to 80 characters" }).waitFor();
  assert.equal(await name.getAttribute("aria-invalid"), "true");
  assert.equal(await form.getByLabel("Folder").getAttribute("aria-invalid"), null, "only the named field");
  await page.screenshot({ path: join(shots, "shares.png"), fullPage: true });
});

test("a schedule's cron editor previews the next runs and names a bad field", async () => {
  await page.goto(base + "/#/schedules");
  const form = page.locator("#schedule-form");
  const cron = form.getByLabel(/^Cron/);
  await cron.fill("30 2 * * *");
  await form.locator(".preview").filter({ hasText: "Next:" }).filter({ hasText: /·.*·/ }).waitFor();
  await cron.fill("30 25 * * *");
  await form.locator(".preview .field-error").filter({ hasText: "hour field '25'" }).waitFor();
  await form.getByLabel("Name").fill("nightly check");
  await form.getByRole("button", { name: "Add schedule" }).click();
  await form.locator('label:has(input[name="cron"]) .field-error').filter({ hasText: "hour field" }).waitFor();
  await cron.fill("30 2 * * *");
  await form.getByRole("button", { name: "Add schedule" }).click();
  await page.locator("#schedules").filter({ hasText: "nightly check" }).waitFor();
  await page.screenshot({ path: join(shots, "schedules.png"), fullPage: true });
});

test("every page renders; a screenshot of each is kept", async () => {
  for (const [hash, heading] of [["disks", "Disks"], ["tuning", "Tuning"], ["benchmarks", "Benchmarks"], ["system", "System"]]) {
    await page.goto(`${base}/#/${hash}`);
    await page.getByRole("heading", { name: heading, exact: true }).waitFor();
    await page.screenshot({ path: join(shots, `${hash}.png`), fullPage: true });
  }
  // A phone's width: the navigation wraps, nothing scrolls sideways.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(base + "/#/");
  await page.locator("#clusters").waitFor();
  const wide = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);
  assert.equal(wide, false, "no horizontal scrolling at phone width");
  await page.screenshot({ path: join(shots, "dashboard-phone.png"), fullPage: true });
});

test("the system page renames the box, lists sessions and guards reboot", async () => {
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto(base + "/#/system");
  await page.locator("#sessions").filter({ hasText: "(this one)" }).waitFor();
  // The fixture's root is on the SD card; its writes are reported.
  await page.locator("#card-writes").filter({ hasText: /mmcblk0: .*(per day on average|not measured yet)/ }).waitFor();
  const name = page.locator("#hostname-form");
  await name.getByLabel("Host name").fill("Bad_Name");
  await name.getByRole("button", { name: "Rename" }).click();
  await name.locator('label:has(input[name="hostname"]) .field-error').filter({ hasText: "lower-case" }).waitFor();
  await name.getByLabel("Host name").fill("nasd-test");
  await name.getByRole("button", { name: "Rename" }).click();
  await page.waitForFunction(() => !document.querySelector("#hostname-form .error")?.textContent);
  for (let i = 0; i < 50 && !existsSync(join(root, "etc/hostname")); i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(readFileSync(join(root, "etc/hostname"), "utf8"), "nasd-test\n", "written to the fixture's /etc");
  const power = page.locator("#power-form");
  await power.getByRole("button", { name: "Do it" }).click();
  await power.locator('label:has(input[name="confirm"]) .field-error').filter({ hasText: "type 'reboot' to confirm" }).waitFor();
  await power.getByLabel(/confirm/).fill("reboot");
  await power.getByRole("button", { name: "Do it" }).click();
  // A daemon on a fixture tree never reboots the machine it runs on.
  await power.locator(".error").filter({ hasText: "reads a fixture tree" }).waitFor();
  await page.screenshot({ path: join(shots, "system.png"), fullPage: true });
});
