import { createServer, type Server, type Socket } from 'node:net';
import { MAX_MESSAGE_BYTES } from './parse';

/**
 * The MLLP transport (HL7 v2 over TCP): each message framed as <VT> message <FS><CR>, answered on
 * the same connection with an ACK in the same framing. This module is the framing and connection
 * care only; what a message means is the `handle` function's business.
 */

export const VT = 0x0b;
export const FS = 0x1c;
export const CR = 0x0d;

export interface MllpPeer {
  remoteAddress: string | undefined;
  remotePort: number | undefined;
}

export interface MllpServerOptions {
  /** Answers one message (the frame's content, UTF-8) with the ER7 ACK to send back. */
  handle(message: string, peer: MllpPeer): Promise<string>;
  /**
   * The ACK for a frame that grew past maxFrameBytes before its end marker, from its first bytes;
   * sent before the connection is closed. Without it the connection just closes.
   */
  tooLarge?(head: string, peer: MllpPeer): string;
  /** Largest frame content accepted; default MAX_MESSAGE_BYTES (256 KiB). */
  maxFrameBytes?: number;
  /** A connection that sends nothing for this long is closed; default 60 s. */
  idleTimeoutMs?: number;
  /** Told about connections closed for cause (garbage, oversize, handler failure). */
  onConnectionError?(reason: string, peer: MllpPeer): void;
}

export interface MllpServer {
  readonly server: Server;
  /** Starts listening; resolves with the bound port (useful with port 0). */
  listen(port: number, host?: string): Promise<number>;
  /** Stops listening and closes every open connection. */
  close(): Promise<void>;
}

export function frame(message: string): Buffer {
  return Buffer.concat([Buffer.from([VT]), Buffer.from(message, 'utf8'), Buffer.from([FS, CR])]);
}

/** How many frames a connection may have waiting for their answer before reading pauses. */
const MAX_PENDING_FRAMES = 8;

export function createMllpServer(options: MllpServerOptions): MllpServer {
  const maxFrameBytes = options.maxFrameBytes ?? MAX_MESSAGE_BYTES;
  const idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
  const sockets = new Set<Socket>();

  const server = createServer((socket) => {
    sockets.add(socket);
    const peer: MllpPeer = { remoteAddress: socket.remoteAddress, remotePort: socket.remotePort };
    let buffer = Buffer.alloc(0);
    const pending: string[] = [];
    let answering = false;

    const fail = (reason: string) => {
      options.onConnectionError?.(reason, peer);
      socket.destroy();
    };

    // Answers frames one at a time, in order, so ACKs come back in the order messages were sent.
    const answerNext = async () => {
      if (answering) return;
      answering = true;
      while (pending.length > 0 && !socket.destroyed) {
        const message = pending.shift()!;
        try {
          const ack = await options.handle(message, peer);
          if (!socket.destroyed) socket.write(frame(ack));
        } catch (error) {
          fail(`handler failed: ${(error as Error).message}`);
        }
        if (pending.length < MAX_PENDING_FRAMES && socket.isPaused()) socket.resume();
      }
      answering = false;
    };

    socket.setTimeout(idleTimeoutMs, () => fail('idle timeout'));
    socket.on('error', () => {
      // A reset by the peer is its business; the socket is closed either way.
    });
    socket.on('close', () => sockets.delete(socket));
    socket.on('data', (chunk) => {
      buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
      for (;;) {
        // Line ends between frames are tolerated (some senders add them).
        let start = 0;
        while (start < buffer.length && (buffer[start] === CR || buffer[start] === 0x0a)) start++;
        buffer = buffer.subarray(start);
        if (buffer.length === 0) return;
        if (buffer[0] !== VT) return fail('data outside an MLLP frame (no <VT> start block)');
        const end = buffer.indexOf(FS);
        if (end === -1) {
          if (buffer.length - 1 > maxFrameBytes) {
            const head = buffer.subarray(1, 4097).toString('utf8');
            const ack = options.tooLarge?.(head, peer);
            if (ack) socket.end(frame(ack));
            options.onConnectionError?.(`frame larger than ${maxFrameBytes} bytes`, peer);
            if (!ack) socket.destroy();
            buffer = Buffer.alloc(0);
            socket.pause();
          }
          return;
        }
        if (end - 1 > maxFrameBytes) return fail(`frame larger than ${maxFrameBytes} bytes`);
        const message = buffer.subarray(1, end).toString('utf8');
        // The <CR> after <FS> is skipped with the line ends above, even when it arrives later.
        buffer = buffer.subarray(end + 1);
        pending.push(message);
        if (pending.length >= MAX_PENDING_FRAMES) socket.pause();
        void answerNext();
      }
    });
  });

  return {
    server,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve((server.address() as { port: number }).port);
        });
      }),
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
