//! Points the embedded web UI at `webui/dist` (built by `make ui`). A
//! debug build without it still builds, saying so loudly and serving a page
//! that says how to build the UI; a release build refuses, so no board
//! image ships without its UI.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let dist = manifest.join("../webui/dist");
    println!("cargo:rerun-if-changed={}", dist.display());
    println!(
        "cargo:rerun-if-changed={}",
        dist.join("index.html").display()
    );
    let release = std::env::var("PROFILE").as_deref() == Ok("release");
    let folder = if dist.join("index.html").is_file() {
        dist
    } else if release {
        panic!(
            "the web UI is not built ({} is missing): run `make ui` before a release build",
            dist.join("index.html").display()
        );
    } else {
        println!(
            "cargo:warning=the web UI is not built: this debug binary serves a placeholder page (run `make ui`)"
        );
        let placeholder =
            PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo")).join("webui");
        std::fs::create_dir_all(&placeholder).expect("OUT_DIR is writable");
        std::fs::write(
            placeholder.join("index.html"),
            "<!doctype html><title>nasd</title><h1>nasd</h1>\
             <p>This build has no web UI: run <code>make ui</code>, then build again. The API is at /api/v1/.</p>\n",
        )
        .expect("OUT_DIR is writable");
        placeholder
    };
    println!("cargo:rustc-env=NASD_WEBUI_DIR={}", folder.display());
}
