// Generates the TypeScript contracts and a descriptor set from proto/ with buf and ts-proto.
// Output goes to src/generated and descriptor/, both produced here and never edited by hand.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';

const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const workspaceRoot = resolve(packageRoot, '../..');
const generated = join(packageRoot, 'src/generated');
const descriptorDir = join(packageRoot, 'descriptor');
const buf = join(workspaceRoot, 'node_modules/.bin/buf');

rmSync(generated, { recursive: true, force: true });
mkdirSync(descriptorDir, { recursive: true });
execFileSync(buf, ['generate'], { cwd: workspaceRoot, stdio: 'inherit' });
// The descriptor set feeds server reflection: every loom.v1 file and its imports (the well-known types, google.rpc),
// with their comments (buf keeps source code info), and the files of the gRPC services every loom server also runs,
// health and reflection, taken from the packages whose definitions the servers load.
const loomFiles = buildDescriptorSet([]);
const grpcFiles = buildGrpcServiceFiles();
const set = create(FileDescriptorSetSchema, { file: [...loomFiles, ...grpcFiles.filter(({ name }) => !loomFiles.some((file) => file.name === name))] });
writeFileSync(join(descriptorDir, 'loom.binpb'), toBinary(FileDescriptorSetSchema, set));

/** The files `buf build` compiles from `args` (an input directory, or none for the workspace's buf.yaml). */
function buildDescriptorSet(args) {
  const image = execFileSync(buf, ['build', ...args, '-o', '-#format=binpb'], {
    cwd: workspaceRoot,
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 << 20,
  });
  return fromBinary(FileDescriptorSetSchema, image).file;
}

/** grpc.health.v1 (grpc-health-check) and grpc.reflection v1 and v1alpha (@grpc/reflection), under their canonical file names. */
function buildGrpcServiceFiles() {
  const require = createRequire(join(packageRoot, 'package.json'));
  const health = join(dirname(require.resolve('grpc-health-check/package.json')), 'proto/health/v1/health.proto');
  const reflection = join(dirname(require.resolve('@grpc/reflection/package.json')), 'build/proto/grpc/reflection');
  const root = mkdtempSync(join(tmpdir(), 'loom-grpc-protos-'));
  try {
    for (const [from, to] of [
      [health, 'grpc/health/v1/health.proto'],
      [join(reflection, 'v1/reflection.proto'), 'grpc/reflection/v1/reflection.proto'],
      [join(reflection, 'v1alpha/reflection.proto'), 'grpc/reflection/v1alpha/reflection.proto'],
    ]) {
      mkdirSync(dirname(join(root, to)), { recursive: true });
      copyFileSync(from, join(root, to));
    }
    return buildDescriptorSet([root]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const header = '// DO NOT EDIT: generated from proto/ by `nx run contracts:generate` (buf + ts-proto).\n';
function stamp(dir) {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) stamp(path);
    else if (path.endsWith('.ts')) writeFileSync(path, header + '/* eslint-disable */\n' + readFileSync(path, 'utf8'));
  }
}
stamp(generated);
