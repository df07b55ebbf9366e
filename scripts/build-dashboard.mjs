// Builds the web dashboard (src/dashboard) into dist/dashboard: one JavaScript and one CSS file,
// named by their content's hash so that browsers may cache them for ever, and index.html pointing
// at them. Everything the dashboard needs is in those files: it loads nothing from elsewhere.
import { createHash } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const source = path.join(root, "src", "dashboard");
const out = path.join(root, "dist", "dashboard");

const result = await build({
  entryPoints: [path.join(source, "main.tsx")],
  bundle: true,
  write: false,
  minify: true,
  sourcemap: false,
  format: "esm",
  target: ["chrome120", "firefox120", "safari17"],
  jsx: "automatic",
  jsxImportSource: "preact",
  outdir: out,
  entryNames: "app",
  logLevel: "warning",
});

await rm(out, { recursive: true, force: true });
await mkdir(path.join(out, "assets"), { recursive: true });
const names = {};
for (const file of result.outputFiles) {
  const ext = path.extname(file.path);
  const hash = createHash("sha256").update(file.contents).digest("hex").slice(0, 12);
  const name = `app-${hash}${ext}`;
  await writeFile(path.join(out, "assets", name), file.contents);
  names[ext] = name;
}
if (!names[".js"] || !names[".css"]) throw new Error("the dashboard build made no JavaScript or no CSS");
const icon = await readFile(path.join(source, "icon.svg"));
const iconName = `icon-${createHash("sha256").update(icon).digest("hex").slice(0, 12)}.svg`;
await writeFile(path.join(out, "assets", iconName), icon);

const template = await readFile(path.join(source, "index.html"), "utf8");
const html = template
  .replace("%SCRIPT%", `assets/${names[".js"]}`)
  .replace("%STYLE%", `assets/${names[".css"]}`)
  .replace("%ICON%", `assets/${iconName}`);
await writeFile(path.join(out, "index.html"), html);
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
console.log(
  `dashboard: ${result.outputFiles.map((f) => `${path.extname(f.path).slice(1)} ${kib(f.contents.length)}`).join(", ")} -> dist/dashboard`,
);
