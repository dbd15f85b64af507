// A share created through the web form, served by a real smbd (root: a
// loop-mounted ext4 for the data, smbd on a loopback port with its state
// in a temporary directory, /etc pointed there with --etc-dir), and seen
// by smbclient. The same arrangement as tests/shares.rs.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, readdirSync, truncateSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium } from "playwright-core";

const repo = resolve(import.meta.dirname, "../..");
const nasdBin = process.env.NASD_BIN ?? join(repo, "target/debug/nasd");
const shots = join(repo, "target/browser");

let dir, loopDev, daemon, browser, page, base, smbPort;

function freePort() {
  return new Promise((ok) => {
    const srv = createServer().listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

before(async () => {
  assert.equal(process.getuid(), 0, "this test needs root (loop device, mount, smbd)");
  dir = mkdtempSync(join(tmpdir(), "nasd-ui-shares-"));
  for (const sub of ["etc/samba", "state", "lock", "cache", "private", "pid", "data"]) {
    mkdirSync(join(dir, sub), { recursive: true });
  }
  smbPort = await freePort();
  writeFileSync(join(dir, "etc/samba/nasd-site.conf"), [
    "[global]", `   smb ports = ${smbPort}`, "   interfaces = 127.0.0.1", "   bind interfaces only = yes",
    `   state directory = ${dir}/state`, `   lock directory = ${dir}/lock`, `   cache directory = ${dir}/cache`,
    `   private dir = ${dir}/private`, `   pid directory = ${dir}/pid`, `   ncalrpc dir = ${dir}/state/ncalrpc`, "",
  ].join("\n"));
  const image = join(dir, "disk.img");
  writeFileSync(image, "");
  truncateSync(image, 256 * 2 ** 20);
  loopDev = execFileSync("losetup", ["--find", "--show", image], { encoding: "utf8" }).trim();
  execFileSync("mkfs.ext4", ["-q", loopDev]);
  execFileSync("mount", [loopDev, join(dir, "data")]);
  mkdirSync(join(dir, "data/media"));
  writeFileSync(join(dir, "data/media/hello.txt"), "hello\n");
  writeFileSync(join(dir, "nasd.toml"), "iperf3_port = 0\n");
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  daemon = spawn(nasdBin, ["--config", join(dir, "nasd.toml"), "--root", "/", "--etc-dir", join(dir, "etc"),
    "serve", "--listen", `127.0.0.1:${port}`, "--data-dir", join(dir, "nasd")], { stdio: "ignore" });
  for (let i = 0; ; i++) {
    try { if ((await fetch(base + "/api/v1/health")).ok) break; } catch { /* starting */ }
    if (i > 200) throw new Error("nasd did not start");
    await new Promise((r) => setTimeout(r, 50));
  }
  const token = readFileSync(join(dir, "nasd/setup-token"), "utf8").trim();
  const setup = await fetch(base + "/api/v1/setup", {
    method: "POST", headers: { "content-type": "application/json", origin: base },
    body: JSON.stringify({ token, username: "admin", password: "correct horse battery" }),
  });
  const [name, value] = setup.headers.get("set-cookie").split(";")[0].split("=");
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
  });
  const context = await browser.newContext();
  await context.addCookies([{ name, value, url: base }]);
  page = await context.newPage();
  page.setDefaultTimeout(30_000);
});

after(async () => {
  await browser?.close();
  daemon?.kill();
  for (const f of (() => { try { return readdirSync(join(dir, "pid")); } catch { return []; } })()) {
    spawnSync("kill", [readFileSync(join(dir, "pid", f), "utf8").trim()]);
  }
  spawnSync("pkill", ["-f", join(dir, "etc/samba/smb.conf")]);
  spawnSync("umount", ["-l", join(dir, "data")]);
  if (loopDev) spawnSync("losetup", ["-d", loopDev]);
});

test("a share created through the form is served by smbd", async () => {
  await page.goto(base + "/#/shares");
  const form = page.locator("#share-form");
  await form.getByLabel("Name").fill("media");
  // The filesystem's root, root's and 0755: the page says what nasd changed
  // so that guests can write there.
  await form.getByLabel("Folder").fill(join(dir, "data"));
  await form.getByLabel("Guests may connect").check();
  await form.getByRole("button", { name: "Share" }).click();
  await page.locator("#shares").filter({ hasText: "media" }).filter({ hasText: "guests" }).waitFor();
  await page.locator("#share-outcome").filter({ hasText: /Changed .*data: group \d+ and mode 2777 \(were 0 and 755\)/ }).waitFor();
  await page.screenshot({ path: join(shots, "shares-created.png"), fullPage: true });
  // smbd now offers it (file transfer through it is tests/shares.rs's part).
  const listing = spawnSync("smbclient", ["-N", "-p", String(smbPort), "-L", "//127.0.0.1"], { encoding: "utf8" });
  assert.equal(listing.status, 0, listing.stderr + listing.stdout);
  assert.match(listing.stdout, /^\s*media\s+Disk/m);
});
