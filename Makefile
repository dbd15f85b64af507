# The verbs of the project. `make run` and `make test` are the two set-up
# commands; the others are their parts.

CARGO       ?= cargo
LISTEN      ?= 127.0.0.1:8080
DATA_DIR    ?= $(CURDIR)/var
ARM_TARGETS := aarch64-unknown-linux-gnu armv7-unknown-linux-gnueabihf
# Stripped release binaries must fit comfortably on a board: 8 MB at most.
MAX_BINARY_BYTES := 8000000

VERSION     := $(shell sed -n 's/^version = "\(.*\)"/\1/p' daemon/Cargo.toml | head -1)

.PHONY: run build ui test deps lint test-host test-unit-file test-browser test-cross cross bench image image-boot-check image-smoke-test test-image

## Build and start the daemon on this machine with its database in ./var.
run: build
	@echo "nasd: starting on http://$(LISTEN)/ (data in $(DATA_DIR); first start: setup token in $(DATA_DIR)/setup-token)"
	./target/debug/nasd --config etc/nasd.toml serve --listen $(LISTEN) --data-dir $(DATA_DIR)

build: ui
	$(CARGO) build --locked

## The web UI (Preact, htm, uPlot; built by Vite from the committed
## package-lock) into webui/dist, which the daemon embeds; rebuilt only
## when its sources change.
UI_SOURCES := webui/package-lock.json webui/index.html webui/vite.config.js webui/compress.mjs \
	$(wildcard webui/src/*.js webui/src/*.css webui/src/pages/*.js)
ui: webui/dist/index.html
webui/dist/index.html: $(UI_SOURCES)
	cd webui && npm ci --no-audit --no-fund && npm run build

## Everything: installs what is missing, then lint, unit and system tests,
## the systemd unit check, the UI in headless Chromium, the unit tests for
## both boards under qemu-user, the size-checked release cross builds, and
## both images built and booted in QEMU.
test: deps ui lint test-host test-unit-file test-browser test-cross cross test-image

deps:
	bash tests/install-deps.sh

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

## Unit tests, fixture-tree tests and the system tests (the collectd
## test loads the plugin, so it is built first).
test-host:
	$(CARGO) build --locked -p nasd-collectd
	$(CARGO) test --locked

## systemd-analyze prints a warning (and still exits 0) for a bad key, so
## any output at all fails the check.
test-unit-file: build
	@unit=$$(mktemp -d)/nasd.service; \
	sed "s#^ExecStart=/usr/bin/nasd#ExecStart=$(CURDIR)/target/debug/nasd#" etc/nasd.service > $$unit; \
	out=$$(systemd-analyze verify $$unit 2>&1); \
	if [ -n "$$out" ]; then echo "$$out"; exit 1; fi; echo "etc/nasd.service: verified"

## The web UI in Debian's headless Chromium, driven by playwright-core.
test-browser: build
	cd tests/browser && node --test

## Unit tests (including the fixture-tree inventory tests) for the boards'
## architectures, run under qemu-user (.cargo/config.toml sets the runners).
test-cross: ui
	for t in $(ARM_TARGETS); do $(CARGO) test --locked --lib --target $$t || exit 1; done

## Release binaries for the HC4 (aarch64) and the XU4 (armv7), size-checked,
## then each run under qemu-user against its own board's fixture tree; and
## the collectd plugin for aarch64 (not armv7: see the README).
cross: ui
	for t in $(ARM_TARGETS); do $(CARGO) build --locked --release --target $$t || exit 1; done
	$(CARGO) build --locked --release -p nasd-collectd --target aarch64-unknown-linux-gnu
	@for t in $(ARM_TARGETS); do \
	  size=$$(stat -c %s target/$$t/release/nasd); \
	  echo "target/$$t/release/nasd: $$size bytes"; \
	  [ $$size -le $(MAX_BINARY_BYTES) ] || { echo "larger than $(MAX_BINARY_BYTES) bytes"; exit 1; }; \
	done
	qemu-aarch64-static -L /usr/aarch64-linux-gnu target/aarch64-unknown-linux-gnu/release/nasd \
	  --config /dev/null --root tests/fixtures/odroid-hc4 status | grep -q 'policy0 cpus 0,1,2,3 Cortex-A55'
	qemu-arm-static -L /usr/arm-linux-gnueabihf target/armv7-unknown-linux-gnueabihf/release/nasd \
	  --config /dev/null --root tests/fixtures/odroid-xu4 status | grep -q 'policy4 cpus 4,5,6,7 Cortex-A15'
	@echo "cross: both binaries report their board's clusters under qemu-user"

## Benchmarks against the peer measured in the same run (needs root).
bench: deps ui
	$(CARGO) build --locked --release
	bash tests/bench/mount-options.sh
	bash tests/bench/samba.sh
	bash tests/bench/iperf3.sh
	bash tests/bench/monitoring.sh
	bash tests/bench/diskbench.sh
	cd tests/browser && npm ci --no-audit --no-fund && node ../bench/webui.mjs

## The SD-card image for BOARD=hc4 (arm64) or BOARD=xu4 (armhf; needs
## BLOBS=dir with Hardkernel's boot loaders, see image/README.md) in
## image/out (root: mmdebstrap, qemu-user binfmt).
BOARD ?= hc4
image: cross
	bash image/build.sh $(BOARD)

## Boots the arm64 image in qemu-system-aarch64 until nasd answers and the
## console shows the setup token.
image-boot-check:
	bash image/boot-check.sh image/out/nasd-$(VERSION)-hc4

## The arm64 image's smoke test (root): setup with the console's token,
## the extra disk formatted and mounted, an SMB user and share written and
## read back from the host, its NFS export mounted inside the VM, tuning,
## an upgrade in place, and a reboot that keeps it all.
image-smoke-test:
	bash image/smoke-test.sh image/out/nasd-$(VERSION)-hc4

## Both images built from this tree: the arm64 one through the smoke test;
## the armhf one with stand-ins for Hardkernel's boot loaders, checked for
## their places and booted on qemu-system-arm until nasd answers. Serial
## logs stay in image/out.
test-image: cross
	bash image/build.sh hc4
	bash image/smoke-test.sh image/out/nasd-$(VERSION)-hc4
	bash image/test-xu4.sh
