// The web UI's budgets: bytes transferred for the first load of the
// dashboard (at most 150 KB, compressed as sent) and the time until it is
// ready (its cluster table and first chart drawn) with Chromium's CPU
// throttled 4x (under 1 s). Against the release binary on the HC4 fixture.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createRequire } from "node:module";

const repo = resolve(import.meta.dirname, "../..");
const require = createRequire(join(repo, "tests/browser/package.json"));
const { chromium } = require("playwright-core");
const nasd = process.env.NASD ?? join(repo, "target/release/nasd");

const dir = mkdtempSync(join(tmpdir(), "nasd-uibench-"));
const root = join(dir, "root");
execFileSync("cp", ["-a", join(repo, "tests/fixtures/odroid-hc4"), root]);
writeFileSync(join(dir, "nasd.toml"), "iperf3_port = 0\n");
const port = 20000 + Math.floor(Math.random() * 20000);
const base = `http://127.0.0.1:${port}`;
const daemon = spawn(nasd, ["--config", join(dir, "nasd.toml"), "--root", root,
  "serve", "--listen", `127.0.0.1:${port}`, "--data-dir", join(dir, "state")], { stdio: "ignore" });

try {
  for (let i = 0; ; i++) {
    try { if ((await fetch(base + "/api/v1/health")).ok) break; } catch { /* starting */ }
    if (i > 200) throw new Error("nasd did not start");
    await new Promise((r) => setTimeout(r, 50));
  }
  const token = readFileSync(join(dir, "state/setup-token"), "utf8").trim();
  const setup = await fetch(base + "/api/v1/setup", {
    method: "POST", headers: { "content-type": "application/json", origin: base },
    body: JSON.stringify({ token, username: "admin", password: "correct horse battery" }),
  });
  const cookie = setup.headers.get("set-cookie").split(";")[0];

  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] });
  const context = await browser.newContext();
  const [name, value] = cookie.split("=");
  await context.addCookies([{ name, value, url: base }]);
  const runs = [];
  for (let run = 0; run < 5; run++) {
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send("Network.enable");
    await cdp.send("Network.setCacheDisabled", { cacheDisabled: true });
    await cdp.send("Emulation.setCPUThrottlingRate", { rate: 4 });
    let bytes = 0;
    cdp.on("Network.loadingFinished", (e) => { bytes += e.encodedDataLength; });
    const t0 = Date.now();
    await page.goto(base + "/#/");
    await page.locator("#clusters").waitFor();
    await page.locator("figure.chart canvas").first().waitFor();
    const ms = Date.now() - t0;
    runs.push({ bytes, ms });
    await page.close();
  }
  await browser.close();
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const bytes = median(runs.map((r) => r.bytes));
  const ms = median(runs.map((r) => r.ms));
  console.log(`web UI, first load of the dashboard (median of ${runs.length}, cache off, CPU throttled 4x):`);
  console.log(`  transferred ${bytes} bytes (budget 150000: ${(bytes / 150000).toFixed(2)}x of it)`);
  console.log(`  ready in ${ms} ms (budget 1000: ${(ms / 1000).toFixed(2)}x of it)`);
  if (bytes > 150000 || ms > 1000) process.exitCode = 1;
} finally {
  daemon.kill();
}
