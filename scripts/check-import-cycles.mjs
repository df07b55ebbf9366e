#!/usr/bin/env node
// Fails (exit 1) when the relative imports under src/, platforms/ and fixtures/ form a cycle.
//
// Every import counts, `import type` and `import()` included: a type-only import does not run
// code, but it ties two modules together just the same (a cycle between the services went
// through `import type { BotService }`), and a layering with cycles in it is no layering. Only
// relative specifiers are followed; packages cannot import us back.
//
// Our own check rather than eslint-plugin-import-x's no-cycle: that plugin is not a dependency,
// and this walks the whole tree in well under a second.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

export const DEFAULT_DIRS = ["src", "platforms", "fixtures"];
const SOURCE = /\.(ts|tsx|mts|js|mjs)$/;

function listSources(dir) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "node_modules" ? [] : listSources(full);
    return SOURCE.test(entry.name) && !entry.name.endsWith(".d.ts") ? [full] : [];
  });
}

function isFile(file) {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The file a relative specifier names: TypeScript's `./x.js` is `./x.ts` on disk. */
function resolve(fromFile, specifier) {
  const base = path.resolve(path.dirname(fromFile), specifier);
  const stem = base.replace(/\.(js|mjs|jsx)$/, "");
  const candidates = [`${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, base, path.join(base, "index.ts")];
  return candidates.find(isFile);
}

/** Module → the modules it imports (relative imports only, resolved to files). */
export function importGraph(root, dirs = DEFAULT_DIRS) {
  const graph = new Map();
  for (const file of dirs.flatMap((dir) => listSources(path.join(root, dir)))) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    const targets = new Set();
    for (const { fileName } of importedFiles) {
      if (!fileName.startsWith(".")) continue;
      const target = resolve(file, fileName);
      if (target) targets.add(target);
    }
    graph.set(file, [...targets].sort());
  }
  return graph;
}

/**
 * One cycle per strongly connected component (Tarjan), each as the list of files around it,
 * the first file repeated at the end. Paths are relative to `root`.
 */
export function findImportCycles(root, dirs = DEFAULT_DIRS) {
  const graph = importGraph(root, dirs);
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const components = [];
  let next = 0;

  // Iterative, so a deep import chain cannot overflow the call stack.
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work = [{ node: start, edge: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const edges = graph.get(frame.node) ?? [];
      if (frame.edge < edges.length) {
        const target = edges[frame.edge++];
        if (!graph.has(target)) continue; // outside the walked dirs
        if (!index.has(target)) {
          index.set(target, next);
          low.set(target, next++);
          stack.push(target);
          onStack.add(target);
          work.push({ node: target, edge: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.node, Math.min(low.get(frame.node), index.get(target)));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent), low.get(frame.node)));
      }
      if (low.get(frame.node) === index.get(frame.node)) {
        const component = [];
        let member;
        do {
          member = stack.pop();
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        const selfImport = (graph.get(frame.node) ?? []).includes(frame.node);
        if (component.length > 1 || selfImport) components.push(component);
      }
    }
  }
  return components.map((component) =>
    cycleWithin(graph, new Set(component)).map((file) => path.relative(root, file)),
  );
}

/** A shortest way around the component from its first file (by name) back to it. */
function cycleWithin(graph, members) {
  const start = [...members].sort()[0];
  const cameFrom = new Map();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift();
    for (const target of graph.get(node) ?? []) {
      if (!members.has(target)) continue;
      if (target === start) {
        const cycle = [start];
        for (let at = node; at !== start; at = cameFrom.get(at)) cycle.splice(1, 0, at);
        return [...cycle, start];
      }
      if (!cameFrom.has(target)) {
        cameFrom.set(target, node);
        queue.push(target);
      }
    }
  }
  return [start, start];
}

// `node scripts/check-import-cycles.mjs [root]`: root defaults to this repository.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), ".."));
  const cycles = findImportCycles(root);
  for (const cycle of cycles) console.error(`import cycle: ${cycle.join(" -> ")}`);
  if (cycles.length > 0) {
    console.error(`${cycles.length} import cycle(s); move what both sides need into a module of its own`);
    process.exit(1);
  }
}
