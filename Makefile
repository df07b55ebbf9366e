# meetbot — the commands a developer (and CI) runs. See README.md.
SHELL := /bin/bash
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1

# Debian packages the runner needs: a browser, ffmpeg, a virtual display, a sound server, fonts,
# setpriv (util-linux) which ties helper processes to the runner's life, and tini (the image's PID 1).
APT_PACKAGES := chromium ffmpeg xvfb xauth pulseaudio pulseaudio-utils fonts-liberation fonts-dejavu-core util-linux tini
STAMP := node_modules/.package-lock-stamp

.PHONY: setup build demo test test-unit test-e2e lint typecheck bench clean

setup: system-packages $(STAMP) build

# Installs only what is missing, so a second run takes a second.
system-packages:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

$(STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $(STAMP)

build: $(STAMP)
	npx tsc -p tsconfig.build.json

lint: $(STAMP)
	npx eslint .
	npx prettier --check .

typecheck: $(STAMP)
	npx tsc -p tsconfig.json --noEmit

demo: setup
	node bin/meetbot.js demo

# Unit and integration tests run in parallel; end-to-end tests (real Chromium + ffmpeg, about
# one core each) one file at a time. The last line is the summary: "N passed, N failed".
test: setup lint typecheck
	@rm -rf test-results && mkdir -p test-results
	@status=0; \
	npx vitest run test/unit test/integration --reporter=default --reporter=json --outputFile.json=test-results/fast.json || status=1; \
	npx vitest run test/e2e --no-file-parallelism --reporter=default --reporter=json --outputFile.json=test-results/e2e.json || status=1; \
	node scripts/test-summary.mjs test-results/fast.json test-results/e2e.json || status=1; \
	exit $$status

bench: setup
	node --import tsx bench/bot-lifecycle.ts

clean:
	rm -rf dist test-results .data
