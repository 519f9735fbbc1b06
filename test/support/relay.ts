import { createConnection, createServer, type Socket } from 'node:net';

/**
 * A TCP relay in front of a PostgreSQL server, standing for the network between Parley and
 * the database's machine: `cut()` drops every connection with no word from PostgreSQL (the
 * machine vanished), and while `down` is set new connections are dropped at once.
 */
export interface Relay {
  /** `target` with its port replaced by the relay's. */
  url: string;
  /** The connections through the relay now, both sides. */
  sockets: Set<Socket>;
  down: boolean;
  cut(): void;
  close(): Promise<void>;
}

export async function startRelay(target: URL): Promise<Relay> {
  const sockets = new Set<Socket>();
  const relay: Relay = {
    url: '',
    sockets,
    down: false,
    cut: () => {
      for (const socket of sockets) socket.destroy();
    },
    close: async () => {
      relay.cut();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server = createServer((inbound) => {
    if (relay.down) return void inbound.destroy();
    const outbound = createConnection({ host: target.hostname, port: Number(target.port) });
    for (const socket of [inbound, outbound]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => sockets.delete(socket));
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const through = new URL(target);
  through.port = String((server.address() as { port: number }).port);
  relay.url = through.toString();
  return relay;
}
