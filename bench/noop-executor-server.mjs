// The ceiling of bench/publish.bench.mjs's unary figures: a grpc-js server of loom's Executor service that answers
// PublishMessage at once and does nothing else (no workflow, no interceptors, no authentication), run as its own
// process like `loom serve`. Its calls per second, fed by the same feeder, are the most any server could take from that
// feeder on this machine: the feeder's own CPU per call bounds them. Prints one JSON line, { port }, once listening.
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { ExecutorService, PublishMessageResponse } from '@loom/contracts';

const server = new Server({ 'grpc.enable_channelz': 0 });
server.addService(ExecutorService, {
  publishMessage(call, callback) {
    callback(null, PublishMessageResponse.fromPartial({ messageId: call.request.messageId }));
  },
});
const port = await new Promise((resolve, reject) =>
  server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
);
process.on('SIGTERM', () => server.tryShutdown(() => process.exit(0)));
console.log(JSON.stringify({ port }));
