#!/usr/bin/env node
// The CLI is compiled by `make build` (part of `make setup`); point at the compiled entry.
import "../dist/src/cli.js";
