// The admin UI in real headless Chromium against the real nasd binary on a
// loopback port, reading the HC4 fixture tree (the board is not here; see
// tests/fixtures/README.md). Run by `make test-browser` after the build.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, existsSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium } from "playwright-core";

const repo = resolve(import.meta.dirname, "../..");
const nasdBin = process.env.NASD_BIN ?? join(repo, "target/debug/nasd");
const shots = join(repo, "target/browser");
const password = "correct horse battery";

let daemon, browser, page, base, dataDir;

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
  writeFileSync(join(dir, "nasd.toml"), "");
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  daemon = spawn(nasdBin, [
    "--config", join(dir, "nasd.toml"),
    "--root", join(repo, "tests/fixtures/odroid-hc4"),
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
  await form.getByLabel("Password").fill(password);
  await form.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("heading", { name: "Hardkernel ODROID-HC4" }).waitFor();
});
