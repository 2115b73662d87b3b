#!/usr/bin/env node
// `npm test`'s build: every workspace package's sources into its dist/, as `tsc -p tsconfig.build.json` writes them,
// without checking their types or writing declarations. TypeScript's own emitter, one file at a time
// (ts.transpileModule: what `isolatedModules`, set for every package, guarantees is the same JavaScript), in this one
// process. The typecheck step of `npm test` checks the types of every package, its tests included, in one program
// read from the sources, so checking them again in 25 builds (and writing the declarations only that typecheck read)
// was most of the build's minute. The rest of a package's build script (the embedded PostgreSQL's data template)
// runs as `npm run build` would run it. `npm run build`, `npm start` and the image keep building with tsc.
import { execSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The build script this replaces; what follows it (`&& …`) still runs. */
const TSC_BUILD = 'tsc -p tsconfig.build.json';

/** The workspace packages with a tsc build, in the order the root package.json lists their folders. */
function packagesToBuild() {
  const { workspaces } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  // the root lists folders (`deploy`) and folders' children (`libs/*`), as npm reads them
  const folders = workspaces.flatMap((pattern) =>
    pattern.endsWith('/*')
      ? readdirSync(join(ROOT, pattern.slice(0, -2)))
          .sort()
          .map((name) => join(ROOT, pattern.slice(0, -2), name))
      : [join(ROOT, pattern)],
  );
  return folders
    .filter((dir) => existsSync(join(dir, 'package.json')))
    .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) }))
    .filter(({ manifest }) => manifest.scripts?.build?.startsWith(TSC_BUILD));
}

function formatDiagnostic(diagnostic) {
  return ts.formatDiagnostic(diagnostic, { getCanonicalFileName: (name) => name, getCurrentDirectory: () => ROOT, getNewLine: () => '\n' });
}

/** Writes the package's JavaScript and source maps where tsc would; returns how many files. */
function transpilePackage(dir) {
  const configFile = join(dir, 'tsconfig.build.json');
  const parsed = ts.getParsedCommandLineOfConfigFile(configFile, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => fail(formatDiagnostic(d)) });
  if (parsed === undefined) fail(`cannot read ${relative(ROOT, configFile)}`);
  if (parsed.errors.length > 0) fail(parsed.errors.map(formatDiagnostic).join(''));
  const { outDir, rootDir } = parsed.options;
  if (outDir === undefined || rootDir === undefined) fail(`${relative(ROOT, configFile)} names no outDir or rootDir`);
  // every package is `"type": "module"`, so NodeNext emits ES modules; transpileModule reads no package.json to know
  const options = {
    ...parsed.options,
    module: ts.ModuleKind.ES2022,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    declaration: false,
    declarationMap: false,
    noEmit: false,
  };
  const sources = parsed.fileNames.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'));
  for (const source of sources) {
    const output = join(outDir, relative(rootDir, source)).replace(/\.ts$/, '.js');
    const result = ts.transpileModule(readFileSync(source, 'utf8'), { compilerOptions: options, fileName: source, reportDiagnostics: true });
    const errors = (result.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error);
    if (errors.length > 0) fail(errors.map(formatDiagnostic).join(''));
    mkdirSync(dirname(output), { recursive: true });
    if (result.sourceMapText === undefined) {
      writeFileSync(output, result.outputText);
      continue;
    }
    // transpileModule names the map and the source as if they sat side by side; tsc names them from dist/
    const map = JSON.parse(result.sourceMapText);
    map.file = relative(dirname(output), output);
    map.sources = [relative(dirname(output), source)];
    writeFileSync(`${output}.map`, JSON.stringify(map));
    writeFileSync(output, result.outputText.replace(/\/\/# sourceMappingURL=\S+$/, `//# sourceMappingURL=${map.file}.map`));
  }
  return sources.length;
}

function fail(message) {
  process.stderr.write(`transpile: ${message}\n`);
  process.exit(1);
}

const started = performance.now();
execSync('npx nx run contracts:generate --output-style=static', { cwd: ROOT, stdio: 'inherit' });
const packages = packagesToBuild();
let files = 0;
for (const { dir } of packages) files += transpilePackage(dir);
for (const { dir, manifest } of packages) {
  const rest = manifest.scripts.build.slice(TSC_BUILD.length).replace(/^\s*&&\s*/, '');
  if (rest !== '') execSync(rest, { cwd: dir, stdio: 'inherit' });
}
process.stderr.write(`transpile: ${files} files of ${packages.length} packages in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
