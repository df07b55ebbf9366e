import type { Platform } from "../src/core/index.js";
import type { PlatformAdapter } from "./adapter.js";
import { meetAdapter } from "./meet/index.js";
import { teamsAdapter } from "./teams/index.js";
import { zoomAdapter } from "./zoom/index.js";

/** One adapter per platform: a new platform is one folder and one line here. */
const ADAPTERS: Record<Platform, PlatformAdapter> = {
  google: meetAdapter,
  teams: teamsAdapter,
  zoom: zoomAdapter,
};

export function adapterFor(platform: Platform): PlatformAdapter {
  return ADAPTERS[platform];
}
