import { type Socket, connect } from 'node:net';

interface Reply {
  /** First column of each DataRow, as text. */
  dataRows: string[];
  /** Messages of ErrorResponses. */
  errors: string[];
}

const cstring = (text: string): Buffer => Buffer.from(`${text}\0`);

function frame(type: string | undefined, body: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeInt32BE(body.length + 4);
  return Buffer.concat([type === undefined ? Buffer.alloc(0) : Buffer.from(type), length, body]);
}

/** A raw PostgreSQL wire-protocol client, to send a request in pieces the way no driver does on purpose. */
export class ProtocolConnection {
  private buffer = Buffer.alloc(0);
  private reply: Reply = { dataRows: [], errors: [] };
  private readonly waiters: { type: number; resolve: (reply: Reply) => void }[] = [];

  private constructor(private readonly socket: Socket) {
    socket.on('data', (data: Buffer) => this.receive(data));
  }

  /** Connects as postgres and waits for the first ReadyForQuery. */
  static async open(host: string, port: number): Promise<ProtocolConnection> {
    const socket = connect(port, host);
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const connection = new ProtocolConnection(socket);
    const version = Buffer.from([0, 3, 0, 0]);
    connection.send(
      frame(undefined, Buffer.concat([version, cstring('user'), cstring('postgres'), cstring('database'), cstring('postgres'), Buffer.from([0])])),
    );
    await connection.readyForQuery();
    return connection;
  }

  static parse(sql: string): Buffer {
    return frame('P', Buffer.concat([cstring(''), cstring(sql), Buffer.from([0, 0])]));
  }

  static bind(): Buffer {
    return frame('B', Buffer.concat([cstring(''), cstring(''), Buffer.from([0, 0, 0, 0, 0, 0])]));
  }

  static execute(): Buffer {
    return frame('E', Buffer.concat([cstring(''), Buffer.from([0, 0, 0, 0])]));
  }

  static sync(): Buffer {
    return frame('S', Buffer.alloc(0));
  }

  send(...messages: Buffer[]): void {
    this.socket.write(Buffer.concat(messages));
  }

  /** Resolves with what arrived up to the next ReadyForQuery. */
  readyForQuery(): Promise<Reply> {
    return this.waitFor('Z');
  }

  /** Resolves when the backend has answered with a message of this type (e.g. '1', ParseComplete). */
  waitFor(type: string): Promise<Reply> {
    return new Promise((resolve) => this.waiters.push({ type: type.charCodeAt(0), resolve }));
  }

  /** Lets the server take in what was sent: a few turns of the event loop, not a readiness wait. */
  async settle(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.socket.end(resolve));
    this.socket.destroy();
  }

  private receive(data: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, data]);
    while (this.buffer.length >= 5) {
      const length = this.buffer.readInt32BE(1);
      if (this.buffer.length < length + 1) return;
      const type = this.buffer[0]!;
      const body = this.buffer.subarray(5, length + 1);
      this.buffer = this.buffer.subarray(length + 1);
      if (type === 0x44 /* DataRow */) {
        const columnLength = body.readInt32BE(2);
        this.reply.dataRows.push(body.subarray(6, 6 + columnLength).toString('utf8'));
      } else if (type === 0x45 /* ErrorResponse */) {
        this.reply.errors.push(body.toString('utf8'));
      }
      const index = this.waiters.findIndex((waiter) => waiter.type === type);
      if (index >= 0) {
        const [waiter] = this.waiters.splice(index, 1);
        waiter!.resolve(this.reply);
        if (type === 0x5a) this.reply = { dataRows: [], errors: [] };
      }
    }
  }
}
