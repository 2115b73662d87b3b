// The Python script host: one child process per Python script component, started by
// services/executor/src/scripts/python.ts inside its sandbox (no network namespace, its own PID
// namespace, Node's permission model, a scrubbed environment, capped WebAssembly memory). It loads
// Pyodide once, compiles the component's script, then runs batches of messages.
//
// Protocol: the first line on standard input is the setup
//   { script, role: 'transformer' | 'filter', policy: boolean, pyodideDir, readGrants: [path], mounts: [dir], split: [dir],
//     writeGrant: dir, flushMs, snapshot: boolean, snapshotBytes: number }
// readGrants are what the script may read (never loom's state), mounts the directories Python sees at
// their own paths, split the directories granted entry by entry because they hold state. With `snapshot`,
// descriptor 4 carries a memory snapshot of a fresh interpreter (warm-interpreters.ts) of `snapshotBytes`
// bytes, read to its end and loaded instead of starting the interpreter from scratch.
// Then each line is a batch: `<id> <JSON array of message bodies>`, run in the order they come.
// Answers go to descriptor 3, one JSON line for several messages, written synchronously:
//   { ready: true } | { ready: false, error }   after the setup
//   { id, i, out: [result], errors: { position: error } }
//                                                 the answers to messages i, i+1, ... of batch id: each one's result (the new
//                                                 body or null for no output, a boolean for a filter), and the error text of
//                                                 those that failed, by their position in `out` (where the result is null)
// A batch's answers are written when it ends and whenever `flushMs` have passed since the last ones, so
// the service sees progress; when a message runs over the time limit, the service cannot tell which of
// the unanswered ones it was, and runs them again one batch each (python.ts).
// The exit code FATAL_EXIT (70) says the last answer was to the message that broke the interpreter;
// any other exit leaves the blame to the service.
//
// With the setup { make: true, pyodideDir } instead, the host starts a fresh interpreter, writes its
// memory snapshot to descriptor 3 and exits: it runs no script and sees no workflow (warm-interpreters.ts).
import fs, { constants, readSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';

const ANSWERS = 3;
const SNAPSHOT = 4;
const FATAL_EXIT = 70;
/** Writes all of `data` to a descriptor (a large write may be taken in parts). */
const writeAll = (fd, data) => {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  for (let written = 0; written < bytes.length;) written += writeSync(fd, bytes, written);
};
const answer = (value) => writeAll(ANSWERS, `${JSON.stringify(value)}\n`);

/** The service sent what the protocol does not allow (the host then exits before any script runs). */
class ProtocolError extends Error {
  constructor(what) {
    super(`script host protocol: ${what}`);
    this.name = 'ProtocolError';
  }
}

// Emscripten's NODEFS reads the fs constants through process.binding, which the permission model refuses
const binding = process.binding;
process.binding = (name) => (name === 'constants' ? { fs: constants } : binding(name));

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
const iterator = lines[Symbol.asyncIterator]();
const first = await iterator.next();
if (first.done) process.exit(0);
const setup = JSON.parse(first.value);

// Emscripten stats a mount's root and every directory on the way to a file, and the permission model
// refuses that for a directory granted entry by entry: those answer as a plain directory
const roots = new Set([...setup.mounts, ...setup.split].map((dir) => dir.replace(/\/+$/, '')));
const epoch = new Date(0);
const directoryStats = () => ({
  dev: 0,
  ino: 0,
  mode: 0o40555,
  nlink: 1,
  uid: 0,
  gid: 0,
  rdev: 0,
  size: 4096,
  blksize: 4096,
  blocks: 8,
  atime: epoch,
  mtime: epoch,
  ctime: epoch,
  birthtime: epoch,
  atimeMs: 0,
  mtimeMs: 0,
  ctimeMs: 0,
  isDirectory: () => true,
  isFile: () => false,
  isSymbolicLink: () => false,
});
// Emscripten knows errno codes only: a refusal of the permission model becomes EACCES (Python's
// PermissionError), where its own code would leave the interpreter hanging
const denied = (error) => {
  if (error?.code !== 'ERR_ACCESS_DENIED') return error;
  const refusal = new Error(`EACCES: loom script policy: ${error.message}`);
  refusal.code = 'EACCES';
  return refusal;
};
for (const name of Object.keys(fs).filter((key) => key.endsWith('Sync') && typeof fs[key] === 'function')) {
  const original = fs[name];
  const stats = name === 'lstatSync' || name === 'statSync';
  fs[name] = (...args) => {
    try {
      return original(...args);
    } catch (error) {
      if (stats && error?.code === 'ERR_ACCESS_DENIED' && roots.has(String(args[0]).replace(/\/+$/, ''))) return directoryStats();
      throw denied(error);
    }
  };
}

// Pyodide is loaded as CommonJS, its interpreter's JavaScript first: imported as ES modules, Node would parse the 1 MB
// pyodide.asm.js twice to learn its module format, and pyodide.mjs would load the WebSocket package, crypto and
// child_process at start, about 40 % of a start from a snapshot (docs/benchmarks.md, python); loadPyodide takes the
// interpreter's JavaScript already loaded
const requireCommonJs = createRequire(import.meta.url);
requireCommonJs(`${setup.pyodideDir}/pyodide.asm.js`);
const { loadPyodide } = requireCommonJs(`${setup.pyodideDir}/pyodide.js`);
const output = {
  // print() output goes to the host's log, never to the answers
  stdout: (text) => process.stderr.write(`[stdout] ${text}\n`),
  stderr: (text) => process.stderr.write(`[stderr] ${text}\n`),
};
if (setup.make) {
  // a warm interpreter for a later host: nothing of any workflow has been here, and nothing runs after the snapshot
  const fresh = await loadPyodide({ indexURL: `${setup.pyodideDir}/`, _makeSnapshot: true, ...output });
  writeAll(ANSWERS, fresh.makeMemorySnapshot());
  process.exit(0);
}
const pyodide = await loadPyodide({
  indexURL: `${setup.pyodideDir}/`,
  ...(setup.snapshot ? { _loadSnapshot: readSnapshot(SNAPSHOT, setup.snapshotBytes) } : {}),
  ...output,
});

// the granted host directories become visible to Python at their own paths (everything else is the
// interpreter's in-memory file system); what inside them is not granted, the permission model refuses
if (setup.policy) {
  for (const dir of setup.mounts) {
    pyodide.FS.mkdirTree(dir);
    pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: dir }, dir);
  }
}

/** What the script policy refuses on the JavaScript side of the host. */
class ScriptPolicyError extends Error {
  constructor(what) {
    super(`loom script policy: ${what} is not allowed`);
    this.name = 'ScriptPolicyError';
  }
}

// nothing of the environment stays reachable from the JavaScript side either
const refuse = (what) => () => {
  throw new ScriptPolicyError(what);
};
if (setup.policy) {
  Object.defineProperty(process, 'env', { get: refuse('reading environment variables'), configurable: false });
  for (const name of ['kill', '_kill', 'dlopen', 'chdir', 'setuid', 'setgid', 'setgroups', 'seteuid', 'setegid', 'abort', 'reallyExit']) {
    try {
      Object.defineProperty(process, name, { value: refuse(`process.${name}`), configurable: false, writable: false });
    } catch {
      // a property the platform will not let us replace is one Node's permission model guards
    }
  }
}

let runner;
try {
  // executed as a string rather than through runPython, which parses and tokenises its source in Python first: three
  // times the CPU of this exec on a host's first run (docs/benchmarks.md, python)
  pyodide.globals.set('__loom_prelude', PRELUDE());
  pyodide.runPython('exec(__loom_prelude)');
  const install = pyodide.globals.get('__loom_install');
  pyodide.globals.delete('__loom_install');
  pyodide.globals.delete('__loom_prelude');
  const config = pyodide.toPy({
    policy: setup.policy,
    readGrants: setup.readGrants,
    writeGrant: setup.writeGrant,
    role: setup.role,
    script: setup.script,
    flushMs: setup.flushMs,
  });
  runner = install(config);
  install.destroy();
  config.destroy();
} catch (error) {
  answer({ ready: false, error: lastLine(error) });
  process.exit(0);
}
const begin = runner.get('begin');
const step = runner.get('step');
const progress = runner.get('progress');
answer({ ready: true });

for (;;) {
  const next = await iterator.next();
  if (next.done) break;
  const line = next.value;
  const space = line.indexOf(' ');
  const id = Number(line.slice(0, space));
  const count = begin(id, line.slice(space + 1));
  let first = 0;
  try {
    // each step runs messages until the batch ends or flushMs have passed, and answers them in one line
    for (let answers = step(); answers !== ''; answers = step()) {
      writeAll(ANSWERS, answers);
      first = progress();
    }
  } catch (error) {
    // a fatal interpreter error (stack exhausted, memory corrupt): the answers of this step are lost with it. The one
    // message left is the one that broke the interpreter: answer it, and let the service start a new host. With more
    // left, which one it was is unknown: the service finds out (python.ts).
    if (count - first === 1) {
      answer({ id, i: first, out: [null], errors: { 0: lastLine(error) } });
      process.exit(FATAL_EXIT);
    }
    process.exit(FATAL_EXIT + 1);
  }
}

/** The `size` bytes a descriptor carries, read into one buffer of that size; anything else is refused. */
function readSnapshot(fd, size) {
  if (!Number.isSafeInteger(size) || size <= 0) throw new ProtocolError(`a snapshot's size must be a positive integer, not ${size}`);
  const snapshot = new Uint8Array(size);
  let filled = 0;
  for (let read = 1; read > 0 && filled < size; filled += read) read = readSync(fd, snapshot, filled, size - filled);
  if (filled !== size || readSync(fd, new Uint8Array(1)) !== 0) throw new ProtocolError(`the snapshot is not ${size} bytes long`);
  return snapshot;
}

function lastLine(error) {
  const text = String(error?.message ?? error);
  return (
    text
      .split('\n')
      .filter((line) => line.trim() !== '')
      .at(-1)
      ?.trim() ?? text
  );
}

// The Python side: the policy (an audit hook that refuses what the policy does not grant, with a
// PermissionError naming it; no environment; no bridge to JavaScript), then the script compiled as
// the body of a function of `body`, and the call that runs it for one message.
// eslint-disable-next-line max-lines-per-function -- its body is Python source text, not JavaScript
function PRELUDE() {
  return String.raw`
def __loom_install(setup):
    import sys, os, json, builtins, posix, time

    policy = bool(setup['policy'])
    role = setup['role']
    read = tuple(os.path.normpath(d) for d in setup['readGrants'])
    write = os.path.normpath(setup['writeGrant'])
    # the interpreter's own standard library lives in its in-memory file system
    internal = ('/lib/', '/usr/lib/')
    network = ('socket.', 'urllib.', 'http.client.', 'ftplib.', 'smtplib.', 'poplib.', 'imaplib.', 'nntplib.', 'telnetlib.', 'webbrowser.')
    processes = ('subprocess.Popen', 'os.system', 'os.exec', 'os.posix_spawn', 'os.spawn', 'os.fork', 'os.forkpty', 'pty.spawn', 'os.kill', 'os.killpg', 'signal.pthread_kill')
    writes = ('os.remove', 'os.rename', 'os.mkdir', 'os.rmdir', 'os.chmod', 'os.chown', 'os.utime', 'os.link', 'os.symlink', 'os.truncate', 'shutil.rmtree', 'shutil.copyfile', 'shutil.move')
    introspection = ('sys._getframe', 'sys._current_frames', 'gc.get_objects', 'gc.get_referrers', 'gc.get_referents', 'sys.settrace', 'sys.setprofile', 'sys.addaudithook', 'code.__new__', 'function.__new__', 'ctypes.', 'marshal.loads')
    bridges = frozenset(('js', 'pyodide', 'pyodide_js', '_pyodide', '_pyodide_core', 'pyodide_http', 'micropip', 'ctypes', '_ctypes', 'subprocess', '_posixsubprocess', 'multiprocessing', 'socket', '_socket', 'ssl', '_ssl', 'select', 'asyncio', '__main__'))
    refused_env = "loom script policy: reading environment variables is not allowed"

    class Environment(dict):
        """The environment under the policy: empty, and every read or listing is refused."""
        def __getitem__(self, key):
            raise PermissionError(f"loom script policy: reading environment variable {key!r} is not allowed")
        def get(self, key, default=None):
            raise PermissionError(f"loom script policy: reading environment variable {key!r} is not allowed")
        def __iter__(self):
            raise PermissionError(refused_env)
        def __len__(self):
            raise PermissionError(refused_env)
        keys = items = values = copy = __repr__ = __str__ = lambda self: (_ for _ in ()).throw(PermissionError(refused_env))

    def under(path, dirs):
        return any(path == d or path.startswith(d.rstrip('/') + '/') for d in dirs)

    def path_of(value):
        if isinstance(value, int):
            return None  # an open descriptor: its path was checked when it was opened
        if isinstance(value, bytes):
            value = value.decode('utf-8', 'replace')
        return os.path.normpath(os.path.join(os.getcwd(), os.fspath(value)))

    def hook(event, args):
        if event == 'open':
            path = path_of(args[0])
            if path is None:
                return
            mode = args[1] or 'r'
            flags = args[2] or 0
            writing = any(c in str(mode) for c in 'wax+') or (flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND))
            if writing:
                if not under(path, (write,)):
                    raise PermissionError(f"loom script policy: writing {path} is not allowed (only the private temp directory {write})")
            elif not (under(path, read) or path.startswith(internal)):
                raise PermissionError(f"loom script policy: reading {path} is not allowed (outside the granted directories)")
        elif event in ('os.listdir', 'os.scandir'):
            path = path_of(args[0] if args and args[0] is not None else '.')
            if path is not None and not (under(path, read) or path.startswith(internal)):
                raise PermissionError(f"loom script policy: listing {path} is not allowed (outside the granted directories)")
        elif event.startswith(writes):
            path = path_of(args[0]) if args and isinstance(args[0], (str, bytes, os.PathLike)) else None
            if path is None or not under(path, (write,)):
                raise PermissionError(f"loom script policy: {event} on {path} is not allowed (only the private temp directory {write})")
        elif event.startswith(network):
            raise PermissionError(f"loom script policy: network access is not allowed ({event})")
        elif event.startswith(processes):
            raise PermissionError(f"loom script policy: creating or signalling processes is not allowed ({event})")
        elif event.startswith(introspection):
            raise PermissionError(f"loom script policy: {event} is not allowed")
        elif event in ('os.putenv', 'os.unsetenv'):
            raise PermissionError("loom script policy: changing environment variables is not allowed")
        elif event == 'import' and str(args[0]).split('.')[0] in bridges:
            raise PermissionError(f"loom script policy: importing {args[0]} is not allowed")

    source = 'def __loom_script(body):\n' + ''.join('    ' + line + '\n' for line in (setup['script'] or 'pass').splitlines()) + '    pass\n'
    namespace = {'__name__': '__loom_script__', '__builtins__': builtins}
    exec(compile(source, '<script>', 'exec'), namespace)
    script = namespace['__loom_script']

    limit = sys.setrecursionlimit
    limit(min(sys.getrecursionlimit(), 900))
    if policy:
        # relative paths land in the private temp directory, the one place a script may write
        os.chdir(write)
        # no module that bridges to JavaScript or to the machine stays loaded for the script to pick up
        for name in list(sys.modules):
            if name.split('.')[0] in bridges:
                del sys.modules[name]
        # importlib does not raise the import audit event: the finders that make the bridge modules go too
        sys.meta_path[:] = [finder for finder in sys.meta_path if not getattr(finder, '__module__', type(finder).__module__).split('.')[0].lstrip('_').startswith('pyodide')]
        sys.path_hooks[:] = [hook for hook in sys.path_hooks if not getattr(hook, '__module__', '').split('.')[0].lstrip('_').startswith('pyodide')]
        posix.environ.clear()
        posix.environ = os.environ = Environment()
        sys.setrecursionlimit = lambda n: limit(min(int(n), 900))
        sys.addaudithook(hook)

    dumps, loads = json.dumps, json.loads
    # allow_nan=False: NaN and Infinity are not JSON, and would spoil the whole line of answers
    encode = json.JSONEncoder(allow_nan=False, separators=(',', ':')).encode
    clock = time.monotonic
    flush_after = max(int(setup['flushMs']), 1) / 1000
    # below this between two looks at the clock, messages are quick: look every 2, 4, ... 32 messages (a look calls into JavaScript)
    quick = flush_after / 100
    filter_role = role == 'filter'

    def outcome(body):
        """The script's result for one message, or the error text of its failure."""
        try:
            result = script(body)
        except (KeyboardInterrupt, SystemExit) as error:
            return False, f"{type(error).__name__}: the script tried to stop the interpreter"
        except BaseException as error:
            return False, f"{type(error).__name__}: {error}"
        if filter_role:
            if result is True or result is False:
                return True, result
            return False, f"a filter must return True or False, not {type(result).__name__}"
        if result is None or isinstance(result, dict):
            return True, result
        return False, f"a transformer must return a dict (the new message) or None, not {type(result).__name__}"

    def encoded(outs, errors):
        """The results as one JSON array; a result that is not JSON becomes that message's error."""
        try:
            return encode(outs)
        except (TypeError, ValueError, RecursionError):
            pass
        for position, out in enumerate(outs):
            try:
                encode(out)
            except (TypeError, ValueError, RecursionError) as error:
                outs[position] = None
                errors[str(position)] = f"the returned message is not JSON: {error}"
        return encode(outs)

    batch = {'id': 0, 'bodies': [], 'next': 0}

    def begin(request_id, text):
        """Takes a batch (a JSON array of message bodies); returns how many messages it has."""
        batch['id'], batch['bodies'], batch['next'] = request_id, loads(text), 0
        return len(batch['bodies'])

    def step():
        """Runs the batch's next messages until it ends or flush_after has passed; their answers as one line ('' when done)."""
        bodies, first = batch['bodies'], batch['next']
        count = len(bodies)
        if first >= count:
            return ''
        last = clock()
        deadline = last + flush_after
        outs, errors = [], {}
        index, stride, countdown = first, 1, 1
        while index < count:
            ok, out = outcome(bodies[index])
            if not ok:
                errors[str(len(outs))] = out
                out = None
            outs.append(out)
            index += 1
            countdown -= 1
            if countdown == 0:
                now = clock()
                if now >= deadline:
                    break
                stride = min(stride * 2, 32) if now - last < quick else 1
                countdown, last = stride, now
        batch['next'] = index
        return '{"id":%d,"i":%d,"out":%s,"errors":%s}\n' % (batch['id'], first, encoded(outs, errors), dumps(errors))

    def progress():
        """How many messages of the batch are answered."""
        return batch['next']

    return {'begin': begin, 'step': step, 'progress': progress}
`;
}
