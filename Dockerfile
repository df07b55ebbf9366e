# The bot runner's image: `docker run -e BOT_CONFIG='{...}' meetbot` runs one bot (the control
# plane's Docker launcher starts one container per bot); `docker run meetbot serve` runs the
# control plane from the same image. The system packages come from the Makefile's own list
# (`make system-packages`), so the image and a developer's machine install exactly the same.
# No Docker engine runs where this project is developed: this file is kept right by reading.
FROM node:24-bookworm

# NODE_ENV=production only after the build: with it, `npm ci` would leave out the compiler.
ENV PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
    MEETBOT_CHROMIUM_PATH=/usr/bin/chromium

WORKDIR /app
COPY package.json package-lock.json Makefile ./
RUN make system-packages node_modules/.package-lock-stamp && rm -rf /var/lib/apt/lists/*

COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
COPY platforms ./platforms
COPY fixtures ./fixtures
COPY scripts/build-dashboard.mjs ./scripts/
RUN make build && npm prune --omit=dev --no-audit --no-fund
ENV NODE_ENV=production

# Not root: Chromium, Xvfb, PulseAudio and ffmpeg all run as this user, and Chromium keeps its
# sandbox (only a root runner gets --no-sandbox). Debian's Chromium sandboxes with unprivileged
# user namespaces, which Docker's default seccomp profile refuses: run the image with a profile
# that allows them (see the README, "Chromium's sandbox"). Its home holds the per-bot work dirs.
RUN useradd --create-home --uid 10001 meetbot
USER meetbot

# Fixed malloc thresholds: the runner (and the server) give back the ~25 MB V8 frees after
# loading Playwright (RUNNER_MALLOC_TUNABLES in src/server/launcher/local-process.ts says why;
# keep the two the same).
ENV GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072:glibc.malloc.trim_threshold=131072

# tini is PID 1 so that `docker stop`'s SIGTERM reaches the runner (which then leaves the call,
# finalizes and uploads the recording) and zombies are reaped.
# --max-semi-space-size=1: the runner's heap is small; V8's default young generation costs ~40 MB.
ENTRYPOINT ["/usr/bin/tini", "--", "node", "--max-semi-space-size=1", "/app/bin/meetbot.js"]
CMD ["run"]
