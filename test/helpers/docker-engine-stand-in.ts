import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A stand-in for the Docker Engine API: a local HTTP server on 127.0.0.1 that speaks exactly the
 * subset of the API DockerLauncher calls (images: inspect, pull; containers: create, copy files
 * in, start, inspect, list with label and status filters, stop, delete; events), keeps containers as records
 * and writes down every request. It runs nothing: a container is "running" because the test says
 * so, and dies when the test makes it (stop, an OOM kill).
 */

export interface EngineRequest {
  method: string;
  /** Without the query, e.g. /containers/create. */
  path: string;
  query: URLSearchParams;
  /** The JSON body, when there was one. */
  body: unknown;
}

export interface StandInContainer {
  Id: string;
  Name: string;
  /** The create request's body as sent. */
  spec: {
    Image: string;
    Labels?: Record<string, string>;
    HostConfig?: { AutoRemove?: boolean };
    [key: string]: unknown;
  };
  State: "created" | "running" | "exited";
  /** Files copied in (PUT /containers/{id}/archive), by their path in the container. */
  files: Map<string, ArchivedFile>;
}

/** One entry of a tar archive copied into a container, as the engine would lay it down. */
export interface ArchivedFile {
  mode: number;
  uid: number;
  gid: number;
  /** Null for a folder. */
  content: Buffer | null;
}

interface EngineEvent {
  Type: "container";
  Action: string;
  Actor: { ID: string; Attributes: Record<string, string> };
  time: number;
  timeNano: number;
}

export class DockerEngineStandIn {
  readonly requests: EngineRequest[] = [];
  readonly containers = new Map<string, StandInContainer>();
  /** Images the engine holds, as `repository:tag`. */
  readonly images = new Set<string>();
  /** Images a pull finds, as `repository:tag`; any other pull is refused as a registry would. */
  readonly pullable = new Set<string>();
  /** Images whose pull starts, then fails in the stream as a registry error does: name → message. */
  readonly pullBreaks = new Map<string, string>();
  /** Images whose pull starts and never ends (a registry that stalls), as `repository:tag`. */
  readonly pullHangs = new Set<string>();
  private readonly events: EngineEvent[] = [];
  private readonly watchers = new Set<{ res: ServerResponse; filters: Filters }>();
  private server: Server | undefined;

  async start(): Promise<{ host: string; port: number; protocol: "http" }> {
    this.server = createServer((req, res) => {
      void this.handle(req, res).catch((err: unknown) => reply(res, 500, { message: String(err) }));
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    const { port } = this.server.address() as AddressInfo;
    return { host: "127.0.0.1", port, protocol: "http" };
  }

  async close(): Promise<void> {
    for (const watcher of this.watchers) watcher.res.end();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  /** The requests made so far with this method whose path matches. */
  made(method: string, path: string | RegExp): EngineRequest[] {
    return this.requests.filter(
      (r) => r.method === method && (typeof path === "string" ? r.path === path : path.test(r.path)),
    );
  }

  /** A container as if an earlier server had started it (for re-adoption). */
  addContainer(
    name: string,
    spec: StandInContainer["spec"],
    state: StandInContainer["State"],
  ): StandInContainer {
    const container: StandInContainer = {
      Id: randomBytes(32).toString("hex"),
      Name: name,
      spec,
      State: state,
      files: new Map(),
    };
    this.containers.set(container.Id, container);
    return container;
  }

  byName(name: string): StandInContainer | undefined {
    return [...this.containers.values()].find((c) => c.Name === name);
  }

  /** The kernel's OOM killer ends the container's main process: `oom`, then `die` with 137. */
  oomKill(container: StandInContainer): void {
    this.emit("oom", container, {});
    this.exit(container, 137);
  }

  /** The container's main process exits on its own with `exitCode` (a crash: no OOM). */
  crash(container: StandInContainer, exitCode: number): void {
    this.exit(container, exitCode);
  }

  /** Open /events streams: a test waits for the launcher's watch before acting on it. */
  get watching(): number {
    return this.watchers.size;
  }

  private exit(container: StandInContainer, exitCode: number): void {
    container.State = "exited";
    this.emit("die", container, { exitCode: String(exitCode) });
    if (container.spec.HostConfig?.AutoRemove) this.containers.delete(container.Id);
  }

  private emit(action: string, container: StandInContainer, extra: Record<string, string>): void {
    const now = Date.now();
    const event: EngineEvent = {
      Type: "container",
      Action: action,
      Actor: {
        ID: container.Id,
        Attributes: { ...container.spec.Labels, image: container.spec.Image, name: container.Name, ...extra },
      },
      time: Math.floor(now / 1000),
      timeNano: now * 1e6,
    };
    this.events.push(event);
    for (const watcher of this.watchers)
      if (matches(event, watcher.filters)) watcher.res.write(`${JSON.stringify(event)}\n`);
  }

  private find(idOrName: string): StandInContainer | undefined {
    return this.containers.get(idOrName) ?? this.byName(idOrName);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://stand-in");
    // Versioned paths (/v1.47/...) are the same routes.
    const path = decodeURIComponent(url.pathname.replace(/^\/v\d+\.\d+/, ""));
    const raw = await readBody(req);
    const isJson = (req.headers["content-type"] ?? "application/json").includes("json");
    const body = raw.length > 0 ? (isJson ? (JSON.parse(raw.toString("utf8")) as unknown) : raw) : undefined;
    const method = req.method ?? "GET";
    this.requests.push({ method, path, query: url.searchParams, body });
    const query = url.searchParams;

    let match: RegExpExecArray | null;
    if (method === "GET" && (match = /^\/images\/(.+)\/json$/.exec(path))) {
      const name = withTag(match[1] as string);
      if (!this.images.has(name)) return reply(res, 404, { message: `No such image: ${name}` });
      return reply(res, 200, { Id: `sha256:${name}`, RepoTags: [name] });
    }
    if (method === "POST" && path === "/images/create") {
      const name = `${query.get("fromImage")}:${query.get("tag") ?? "latest"}`;
      if (this.pullHangs.has(name)) {
        res.writeHead(200, { "content-type": "application/json" });
        res.write(`${JSON.stringify({ status: `Pulling from ${name}` })}\n`);
        return; // ended by close()
      }
      const broken = this.pullBreaks.get(name);
      if (broken !== undefined) {
        res.writeHead(200, { "content-type": "application/json" });
        const lines = [
          { status: `Pulling from ${name}` },
          { errorDetail: { message: broken }, error: broken },
        ];
        res.end(lines.map((line) => `${JSON.stringify(line)}\n`).join(""));
        return;
      }
      if (!this.pullable.has(name))
        return reply(res, 404, {
          message: `pull access denied for ${query.get("fromImage")}, repository does not exist or may require 'docker login'`,
        });
      this.images.add(name);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        `${JSON.stringify({ status: `Pulling from ${name}` })}\n${JSON.stringify({ status: "Done" })}\n`,
      );
      return;
    }
    if (method === "POST" && path === "/containers/create") {
      const spec = body as StandInContainer["spec"];
      const name = query.get("name") ?? "";
      if (name && this.byName(name))
        return reply(res, 409, { message: `Conflict. The container name "/${name}" is already in use` });
      if (!this.images.has(withTag(spec.Image)))
        return reply(res, 404, { message: `No such image: ${spec.Image}` });
      const container = this.addContainer(name, spec, "created");
      return reply(res, 201, { Id: container.Id, Warnings: [] });
    }
    if (method === "GET" && path === "/containers/json") {
      const filters = parseFilters(query.get("filters"));
      const all = query.get("all") === "true" || query.get("all") === "1";
      const listed = [...this.containers.values()].filter(
        (c) =>
          (all || c.State === "running") &&
          (filters.status ?? [c.State]).includes(c.State) &&
          (filters.label ?? []).every((label) => hasLabel(c.spec.Labels ?? {}, label)),
      );
      return reply(
        res,
        200,
        listed.map((c) => ({
          Id: c.Id,
          Names: [`/${c.Name}`],
          Image: c.spec.Image,
          Labels: c.spec.Labels,
          State: c.State,
        })),
      );
    }
    if ((match = /^\/containers\/([^/]+)(\/\w+)?$/.exec(path))) {
      const container = this.find(match[1] as string);
      if (!container) return reply(res, 404, { message: `No such container: ${match[1]}` });
      const action = `${method} ${match[2] ?? ""}`;
      if (action === "PUT /archive") {
        const at = query.get("path") ?? "";
        // Docker extracts into a folder that must already be there; /run is, in any Debian image.
        if (at !== "/run") return reply(res, 404, { message: `Could not find the file ${at} in container` });
        for (const [name, file] of untar(body as Buffer))
          container.files.set(`${at}/${name}`.replace(/\/$/, ""), file);
        return reply(res, 200);
      }
      if (action === "POST /start") {
        if (container.State === "running") return reply(res, 304);
        container.State = "running";
        return reply(res, 204);
      }
      if (action === "POST /stop") {
        if (container.State !== "running") return reply(res, 304);
        this.exit(container, 0); // the runner's SIGTERM path exits 0
        return reply(res, 204);
      }
      if (action === "DELETE ") {
        if (container.State === "running" && query.get("force") !== "true")
          return reply(res, 409, { message: "You cannot remove a running container" });
        this.containers.delete(container.Id);
        return reply(res, 204);
      }
      if (action === "GET /json")
        return reply(res, 200, {
          Id: container.Id,
          Name: `/${container.Name}`,
          Config: { Labels: container.spec.Labels },
          State: { Status: container.State, Running: container.State === "running" },
        });
    }
    if (method === "GET" && path === "/events") {
      const filters = parseFilters(query.get("filters"));
      const since = Number(query.get("since") ?? "0");
      res.writeHead(200, { "content-type": "application/json" });
      res.flushHeaders();
      for (const event of this.events)
        if (event.time >= since && matches(event, filters)) res.write(`${JSON.stringify(event)}\n`);
      const watcher = { res, filters };
      this.watchers.add(watcher);
      res.on("close", () => this.watchers.delete(watcher));
      return;
    }
    reply(res, 404, { message: `the stand-in does not implement ${method} ${path}` });
  }
}

type Filters = Record<string, string[]>;

function parseFilters(raw: string | null): Filters {
  return raw ? (JSON.parse(raw) as Filters) : {};
}

function hasLabel(labels: Record<string, string>, filter: string): boolean {
  const [key = "", value] = filter.split("=", 2);
  return value === undefined ? key in labels : labels[key] === value;
}

function matches(event: EngineEvent, filters: Filters): boolean {
  return (
    (filters.type ?? [event.Type]).includes(event.Type) &&
    (filters.event ?? [event.Action]).includes(event.Action) &&
    (filters.label ?? []).every((label) => hasLabel(event.Actor.Attributes, label))
  );
}

function withTag(image: string): string {
  return /:[^/]+$/.test(image) ? image : `${image}:latest`;
}

function reply(res: ServerResponse, status: number, body?: unknown): void {
  if (body === undefined) {
    res.writeHead(status).end();
    return;
  }
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The entries of a ustar archive, by name (a folder's ends in "/"). */
function untar(archive: Buffer): Map<string, ArchivedFile> {
  const entries = new Map<string, ArchivedFile>();
  const field = (block: Buffer, offset: number, length: number) =>
    block
      .toString("latin1", offset, offset + length)
      .replace(/\0.*$/s, "")
      .trim();
  for (let at = 0; at + 512 <= archive.length;) {
    const block = archive.subarray(at, at + 512);
    const name = field(block, 0, 100);
    if (!name) break; // the two empty blocks at the end
    const size = Number.parseInt(field(block, 124, 12), 8);
    const folder = field(block, 156, 1) === "5";
    const content = folder ? null : Buffer.from(archive.subarray(at + 512, at + 512 + size));
    const [mode, uid, gid] = [100, 108, 116].map((offset) => Number.parseInt(field(block, offset, 8), 8));
    entries.set(name, { mode: mode as number, uid: uid as number, gid: gid as number, content });
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return entries;
}
