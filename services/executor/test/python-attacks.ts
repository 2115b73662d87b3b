// Python scripts that try to get out of the script sandbox: the adversarial suite runs them through a running
// executor, warm-interpreters.test.ts on a host started from a warm interpreter.

/** One attempt: its name, its script (the body of a function of `body`), and the error its message must fail with. */
export interface Attack {
  readonly name: string;
  readonly code: string;
  readonly error: RegExp;
}

/** The error of whatever the script policy refuses. */
export const POLICY = /^PermissionError: loom script policy: /;
/** An attack that the policy refuses, or that fails with `error`. */
export const python = (name: string, code: string, error: RegExp = POLICY): Attack => ({ name, code, error });
/** Python scripts that try to get out of the sandbox, each with the error its message must fail with. */
export const pythonAttacks = ({ url, strayFile }: { url: string; strayFile: string }): Attack[] => [
  python('urllib to the loopback server', `import urllib.request\nreturn {'page': urllib.request.urlopen('${url}').read().decode()}`),
  python(
    'http.client to the loopback server',
    `import http.client\nc = http.client.HTTPConnection('127.0.0.1', ${new URL(url).port})\nc.request('GET', '/')\nreturn {'status': c.getresponse().status}`,
  ),
  python('raw socket', "import socket\ns = socket.create_connection(('127.0.0.1', 5432))\nreturn {'ok': True}"),
  python('raw _socket', "import _socket\nreturn {'s': str(_socket.socket())}"),
  python('js module: process.env', "import js\nreturn {'env': str(js.process.env.LOOM_ADVERSARIAL_SECRET)}"),
  python('pyodide.code.run_js', "import pyodide.code\nreturn {'env': str(pyodide.code.run_js('process.env.LOOM_ADVERSARIAL_SECRET'))}"),
  python('pyodide_js module', "import pyodide_js\nreturn {'v': str(pyodide_js.version)}"),
  python('js through sys.modules', "import sys\nreturn {'env': str(sys.modules['js'].process.env)}", /^KeyError: 'js'$/),
  python(
    '__import__ through a function globals',
    "import json\nimp = json.loads.__globals__['__builtins__']['__import__']\nreturn {'env': str(imp('js').process.env)}",
  ),
  python(
    'gc.get_objects to find a JavaScript proxy',
    "import gc\nproxies = [o for o in gc.get_objects() if 'JsProxy' in type(o).__name__]\nreturn {'n': len(proxies)}",
  ),
  python('frames to reach the host globals', "import sys\nreturn {'g': str(sys._getframe(1).f_globals.keys())}"),
  python('reading /etc/passwd', "return {'p': open('/etc/passwd').read()}"),
  python('reading /proc/self/environ', "return {'e': open('/proc/self/environ').read()}"),
  python('reading outside the grants', "return {'h': open('/root/.bashrc').read()}"),
  python('listing the root directory', "import os\nreturn {'ls': os.listdir('/')}"),
  python('writing outside the private temp directory', `open('${strayFile}', 'w').write('pwned')\nreturn body`),
  python('listing environment variables', "import os\nreturn {'env': dict(os.environ)}"),
  python('reading an environment variable', "import os\nreturn {'secret': os.environ['LOOM_ADVERSARIAL_SECRET']}"),
  python('os.getenv', "import os\nreturn {'secret': os.getenv('LOOM_ADVERSARIAL_SECRET')}"),
  python('posix.environ', "import posix\nreturn {'env': str(posix.environ)}"),
  python('ctypes', "import ctypes\nreturn {'libc': str(ctypes.CDLL(None))}"),
  python('os.system', "import os\nreturn {'rc': os.system('id > /tmp/loom-adversarial-id')}"),
  python('subprocess', "import subprocess\nreturn {'out': subprocess.check_output(['id']).decode()}"),
  python('signalling the service', 'import os\nos.kill(os.getppid(), 9)\nreturn body'),
  // importlib raises no import audit event; the bridge modules' finders are gone, so there is nothing to import
  python(
    'importlib to reopen the JavaScript bridge',
    "import importlib\nreturn {'env': str(importlib.import_module('js').process.env)}",
    /^ModuleNotFoundError: No module named 'js'$/,
  ),
  python('infinite loop', 'while True:\n    pass', /^the script ran longer than the time limit of \d+ ms$/),
  python('memory bomb (bytes)', "return {'n': len(b'x' * 2_000_000_000)}", /^MemoryError/),
  python('memory bomb (lists)', 'x = []\nwhile True:\n    x.append([0] * 10_000_000)', /^MemoryError/),
  python('deep recursion', "import sys\nsys.setrecursionlimit(10**7)\ndef f(n):\n    return f(n + 1)\nreturn {'n': f(0)}", /^RecursionError/),
  python('SystemExit', 'raise SystemExit(0)', /^SystemExit: the script tried to stop the interpreter$/),
];

/** One script that runs the attack whose index is the message's `attack`, and passes any other message on. */
export function pythonScript(attacks: readonly Attack[]): string {
  return [
    "attack = body.get('attack')",
    ...attacks.flatMap((attack, index) => [`if attack == ${index}:`, ...attack.code.split('\n').map((line) => `    ${line}`)]),
    'return body',
  ].join('\n');
}
