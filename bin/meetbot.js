#!/usr/bin/env node
// The CLI is compiled by `make build` (part of `make setup`); point at the compiled entry.
// Where the machine's Node is older than 24, `make setup` put Node 24 in the repository's .node/;
// `npx meetbot` started by the older one hands over to it (same arguments, same exit status).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import module from "node:module";
import { fileURLToPath } from "node:url";

const MIN_MAJOR = 24;
const repoNode = fileURLToPath(new URL("../.node/bin/node", import.meta.url));
const major = Number(process.versions.node.split(".")[0]);

if (major < MIN_MAJOR && existsSync(repoNode) && process.execPath !== repoNode) {
  const child = spawn(repoNode, [...process.execArgv, ...process.argv.slice(1)], { stdio: "inherit" });
  // A stop asked of this process (SIGTERM from a supervisor) is a stop asked of the bot.
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => child.kill(signal));
  child.on("exit", (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    } else process.exit(code ?? 1);
  });
} else if (major < MIN_MAJOR) {
  console.error(`meetbot needs Node ${MIN_MAJOR} or later (this is ${process.version}); run \`make setup\`.`);
  process.exit(1);
} else {
  // Every bot starts a fresh runner that compiles Playwright and the rest anew: V8's compile
  // cache (NODE_COMPILE_CACHE, which the local launcher sets, or else in the OS temp dir; shared
  // by all runners on the machine, rebuilt when a file changes) spares each later start most of
  // that (importing the runner: 560 -> 410 ms of CPU).
  module.enableCompileCache?.();
  await import("../dist/src/cli.js");
}
