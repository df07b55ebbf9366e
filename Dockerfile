# One image for both halves: `docker run … meetbot run` is a bot (BOT_CONFIG in the environment),
# `docker run … meetbot serve` the control plane. The setup steps are the Makefile's own, so the
# image and a developer's machine install exactly the same things.
FROM node:20-bookworm

ENV PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
    MEETBOT_CHROMIUM_PATH=/usr/bin/chromium \
    NODE_ENV=production

WORKDIR /app
COPY package.json package-lock.json Makefile ./
RUN make system-packages node_modules/.package-lock-stamp && rm -rf /var/lib/apt/lists/*

COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
COPY platforms ./platforms
COPY fixtures ./fixtures
RUN make build

# Docker's default /dev/shm is 64 MB; the runner passes --disable-dev-shm-usage to Chromium.
# --max-semi-space-size=1: the runner's heap is small; V8's default young generation costs ~40 MB.
ENTRYPOINT ["node", "--max-semi-space-size=1", "bin/meetbot.js"]
CMD ["run"]
