// Copies the browser builds of the console's third-party libraries from
// node_modules into web/vendor, where console.go embeds them into the binary.
// Run through `make console` (npm ci --prefix console && node console/build.mjs).
// It downloads nothing: npm ci has already fetched the packages.
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const modules = join(here, 'node_modules');
const vendor = join(here, 'web', 'vendor');

// Each entry: package, file inside it, name under web/vendor.
const files = [
  ['cytoscape', 'dist/cytoscape.esm.min.mjs', 'cytoscape.esm.min.mjs'],
  ['elkjs', 'lib/elk.bundled.js', 'elk.bundled.js'],
  ['bpmn-js', 'dist/bpmn-navigated-viewer.production.min.js', 'bpmn-navigated-viewer.production.min.js'],
  ['bpmn-js', 'dist/assets/diagram-js.css', 'diagram-js.css'],
  ['bpmn-js', 'dist/assets/bpmn-js.css', 'bpmn-js.css'],
];

if (!existsSync(modules)) {
  console.error('console/node_modules is missing: run `npm ci --prefix console` first (or `make console`).');
  process.exit(1);
}

rmSync(vendor, { recursive: true, force: true });
mkdirSync(vendor, { recursive: true });

const manifest = {};
for (const [pkg, file, out] of files) {
  const meta = JSON.parse(readFileSync(join(modules, pkg, 'package.json'), 'utf8'));
  copyFileSync(join(modules, pkg, file), join(vendor, out));
  for (const lic of ['LICENSE', 'LICENSE.md', 'LICENSE.txt', 'LICENSE.eclipse']) {
    const p = join(modules, pkg, lic);
    if (existsSync(p)) copyFileSync(p, join(vendor, `${pkg}.${lic}`));
  }
  const entry = manifest[pkg] || { version: meta.version, license: meta.license, files: [] };
  entry.files.push(out);
  manifest[pkg] = entry;
}
writeFileSync(join(vendor, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
console.log('console: vendor files written to', vendor);
for (const [pkg, m] of Object.entries(manifest)) console.log(`  ${pkg} ${m.version} (${m.license}) -> ${m.files.join(', ')}`);
