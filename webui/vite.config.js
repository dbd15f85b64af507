// The UI is built into dist/, which the daemon embeds (rust-embed). Hashed
// file names let the daemon cache assets for a year; index.html is never
// cached, so a firmware update shows its new UI at once.
import { defineConfig } from "vite";

export default defineConfig({
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2020",
    sourcemap: false,
    assetsInlineLimit: 0,
    // One small app: a single chunk loads fastest on a phone.
    modulePreload: false,
  },
});
