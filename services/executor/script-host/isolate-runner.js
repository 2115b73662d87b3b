// The script runner of JavaScript components, compiled and run inside each component's isolate by
// src/scripts/javascript.ts: nothing of Node exists where it runs. It evaluates to `prepare(source, role)`, which answers the run
// function, or the syntax error's text when the script does not compile. `run(input, budgetMs,
// limitMs)` takes the bodies as one JSON array and answers one JSON array with an entry per
// message: 0 no output (transformer) or dropped (filter), 1 passes (filter), 2 over the time
// limit, {"v": body} the new body, {"e": text} a failure. It stops starting messages once
// `budgetMs` has passed (the host carries on with the rest), so one call stays under
// budgetMs + limitMs whatever the batch size. The built-ins it needs are taken before any user
// code runs, and concatenation builds the answer, so a script that replaces JSON, Date or
// Array.prototype spoils its own results only; the host checks the answer anyway.
(function () {
  'use strict';
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const now = Date.now;
  const isArray = Array.isArray;
  const makeFunction = Function;
  const toText = String;
  // wasm memory is not counted against the isolate's memory limit
  delete globalThis.WebAssembly;

  function clip(text) {
    return text.length > 2000 ? text.slice(0, 2000) + '…' : text;
  }
  function typeName(value) {
    if (value === null) return 'null';
    if (isArray(value)) return 'array';
    return typeof value;
  }
  function describe(error) {
    try {
      if ((typeof error === 'object' && error !== null) || typeof error === 'function') {
        const name = error.name;
        const message = error.message;
        if (typeof name === 'string' && typeof message === 'string') return clip(message === '' ? name : name + ': ' + message);
        return 'script threw a non-Error ' + typeName(error);
      }
      return clip('script threw ' + (typeof error === 'string' ? error : toText(error)));
    } catch {
      return 'script threw a value that cannot be described';
    }
  }
  function failure(text) {
    return '{"e":' + stringify(text) + '}';
  }
  // JSON.stringify drops functions and symbols silently; a script returning one made a mistake.
  // A replacer makes stringify three times slower, so a quick walk picks the results that need
  // it: true means no function or symbol anywhere (false may be wrong: the replacer decides).
  function plain(value, depth) {
    if (depth > 32) return false;
    if (isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const item = value[i];
        const type = typeof item;
        if (type === 'function' || type === 'symbol') return false;
        if (type === 'object' && item !== null && !plain(item, depth + 1)) return false;
      }
      return true;
    }
    if (typeof value.toJSON === 'function') return false;
    for (const key in value) {
      const item = value[key];
      const type = typeof item;
      if (type === 'function' || type === 'symbol') return false;
      if (type === 'object' && item !== null && !plain(item, depth + 1)) return false;
    }
    return true;
  }
  function strict(key, value) {
    const type = typeof value;
    if (type === 'function' || type === 'symbol') {
      throw new TypeError((key === '' ? 'the result' : 'property "' + key + '"') + ' is a ' + type);
    }
    return value;
  }
  function transformed(value) {
    if (value === undefined || value === null) return '0';
    if (typeof value !== 'object' || isArray(value)) {
      return failure('a transformer script must return an object (or nothing), got ' + typeName(value));
    }
    if (typeof value.then === 'function') {
      return failure('a transformer script must return an object (or nothing), got a promise: scripts run synchronously');
    }
    let json;
    try {
      json = plain(value, 0) ? stringify(value) : stringify(value, strict);
    } catch (error) {
      return failure('the object the script returned is not JSON-serialisable: ' + describe(error));
    }
    if (typeof json !== 'string' || json[0] !== '{') {
      return failure(
        'a transformer script must return an object (or nothing), got an object whose JSON is ' + (typeof json === 'string' ? 'not an object' : 'nothing'),
      );
    }
    return '{"v":' + json + '}';
  }
  function judged(value) {
    if (value === true) return '1';
    if (value === false) return '0';
    return failure('a filter script must return true or false, got ' + typeName(value));
  }

  return function prepare(source, role) {
    let user;
    try {
      user = makeFunction('body', source);
    } catch (error) {
      return describe(error);
    }
    const answer = role === 'filter' ? judged : transformed;
    return function run(input, budgetMs, limitMs) {
      const bodies = parse(input);
      const count = bodies.length;
      const start = now();
      let out = '[';
      for (let i = 0; i < count; i++) {
        if (i > 0 && now() - start >= budgetMs) break;
        const began = now();
        let entry;
        try {
          const value = user(bodies[i]);
          entry = now() - began > limitMs ? '2' : answer(value);
        } catch (error) {
          entry = now() - began > limitMs ? '2' : failure(describe(error));
        }
        out += (i === 0 ? '' : ',') + entry;
      }
      return out + ']';
    };
  };
})();
