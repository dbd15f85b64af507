// Writes a .gz beside every built file: the daemon sends it to browsers
// that accept gzip, so the board never compresses on the fly.
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync, constants } from "node:zlib";

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

let raw = 0, packed = 0;
for (const file of walk("dist").filter((f) => !f.endsWith(".gz"))) {
  const data = readFileSync(file);
  const gz = gzipSync(data, { level: constants.Z_BEST_COMPRESSION });
  writeFileSync(file + ".gz", gz);
  raw += data.length;
  packed += gz.length;
}
console.log(`compress: ${raw} bytes, ${packed} gzipped`);
