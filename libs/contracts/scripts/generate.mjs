// Generates the TypeScript contracts and a descriptor set from proto/ with buf and ts-proto.
// Output goes to src/generated and descriptor/, both produced here and never edited by hand.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const workspaceRoot = resolve(packageRoot, '../..');
const generated = join(packageRoot, 'src/generated');
const descriptorDir = join(packageRoot, 'descriptor');
const buf = join(workspaceRoot, 'node_modules/.bin/buf');

rmSync(generated, { recursive: true, force: true });
mkdirSync(descriptorDir, { recursive: true });
execFileSync(buf, ['generate'], { cwd: workspaceRoot, stdio: 'inherit' });
// The descriptor set (with imports) feeds server reflection, so grpcurl sees every loom.v1 type.
execFileSync(buf, ['build', '-o', join(descriptorDir, 'loom.binpb')], { cwd: workspaceRoot, stdio: 'inherit' });

const header = '// DO NOT EDIT: generated from proto/ by `nx run contracts:generate` (buf + ts-proto).\n';
function stamp(dir) {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) stamp(path);
    else if (path.endsWith('.ts')) writeFileSync(path, header + '/* eslint-disable */\n' + readFileSync(path, 'utf8'));
  }
}
stamp(generated);
