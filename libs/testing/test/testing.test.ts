import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { captureStream, closedPort } from '../src/index.js';

describe('@loom/testing', () => {
  it('closedPort answers a loopback port that refuses connections', async () => {
    const port = await closedPort();
    const refused = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve('connected');
      });
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    });
    expect(refused).toBe('ECONNREFUSED');
  });

  it('captureStream keeps what is written, as text and as JSON lines', async () => {
    const captured = captureStream();
    await new Promise<void>((resolve) => captured.stream.write('{"msg":"one"}\n{"msg":', () => resolve()));
    await new Promise<void>((resolve) => captured.stream.write('"two"}\n', () => resolve()));
    expect(captured.text()).toBe('{"msg":"one"}\n{"msg":"two"}\n');
    expect(captured.lines()).toEqual([{ msg: 'one' }, { msg: 'two' }]);
  });
});
