import type { Platform } from "../src/core/index.js";
import type { PlatformAdapter } from "./adapter.js";
import { meetAdapter } from "./meet/index.js";
import { teamsAdapter } from "./teams/index.js";
import { zoomAdapter } from "./zoom/index.js";

/** Platforms the runner can join so far; Zoom and Teams add one line each. */
const ADAPTERS: Partial<Record<Platform, PlatformAdapter>> = {
  google: meetAdapter,
  teams: teamsAdapter,
  zoom: zoomAdapter,
};

export function adapterFor(platform: Platform): PlatformAdapter {
  const adapter = ADAPTERS[platform];
  if (!adapter) throw new Error(`platform "${platform}" is not supported by this runner yet`);
  return adapter;
}
