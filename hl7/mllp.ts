import { createServer, type Server, type Socket } from 'node:net';
import { decodeFrame } from './charset';
import { MAX_MESSAGE_BYTES } from './parse';

/**
 * The MLLP transport (HL7 v2 over TCP): each message framed as <VT> message <FS><CR>, answered on
 * the same connection in the same framing. This module is the framing, the character set (MSH-18)
 * and the care of connections; what a message means is the `handle` function's business.
 *
 * Every peer has a bounded cost: connections are capped in total and per address; a frame must be
 * complete within a deadline that arriving bytes do not extend; a frame is buffered in one growing
 * buffer (linear however it is split); at most a frame's worth of frames waits for its answer; and
 * answers are written only as fast as the peer reads them (reading pauses until it catches up).
 */

export const VT = 0x0b;
export const FS = 0x1c;
export const CR = 0x0d;

export interface MllpPeer {
  remoteAddress: string | undefined;
  remotePort: number | undefined;
}

export interface MllpServerOptions {
  /**
   * Answers one message (the frame's content, decoded by its MSH-18): `reply` sends an answer on
   * the connection (zero, one or several: enhanced acknowledgement mode sends an accept and an
   * application acknowledgement). The next frame is handled once this resolves.
   */
  handle(message: string, reply: (answer: string) => void, peer: MllpPeer): Promise<void>;
  /**
   * The ACK for a frame that grew past maxFrameBytes before its end marker, from its first bytes;
   * sent before the connection is closed. Without it the connection just closes.
   */
  tooLarge?(head: string, peer: MllpPeer): string;
  /** Largest frame content accepted; default MAX_MESSAGE_BYTES (256 KiB). */
  maxFrameBytes?: number;
  /** A connection that sends and reads nothing for this long is closed; default 60 s. */
  idleTimeoutMs?: number;
  /** A frame must be complete this long after its start block, however its bytes trickle in; default 30 s. */
  frameDeadlineMs?: number;
  /** Open connections at most, all peers together; default 200. */
  maxConnections?: number;
  /** Open connections at most from one address; default 20. */
  maxConnectionsPerAddress?: number;
  /** Told about connections refused or closed for cause (garbage, oversize, deadline, handler failure, caps). */
  onConnectionError?(reason: string, peer: MllpPeer): void;
}

export interface MllpServer {
  readonly server: Server;
  /** Starts listening; resolves with the bound port (useful with port 0). */
  listen(port: number, host?: string): Promise<number>;
  /** Stops listening and closes every open connection. */
  close(): Promise<void>;
}

export function frame(message: string | Buffer): Buffer {
  const content = typeof message === 'string' ? Buffer.from(message, 'utf8') : message;
  return Buffer.concat([Buffer.from([VT]), content, Buffer.from([FS, CR])]);
}

/** How many frames a connection may have waiting for their answer before reading pauses. */
const MAX_PENDING_FRAMES = 8;

/**
 * One frame's content as it arrives: a buffer that doubles when full, so a frame sent a byte at a
 * time costs linear time and at most twice its size, where concatenating per chunk was quadratic.
 */
class FrameBuffer {
  private store = Buffer.allocUnsafe(0);
  length = 0;

  append(bytes: Buffer): void {
    if (this.length + bytes.length > this.store.length) {
      const grown = Buffer.allocUnsafe(Math.max(4096, this.store.length * 2, this.length + bytes.length));
      this.store.copy(grown, 0, 0, this.length);
      this.store = grown;
    }
    bytes.copy(this.store, this.length);
    this.length += bytes.length;
  }

  /** The content so far (a copy, so the buffer can be reused) and empties the buffer. */
  take(): Buffer {
    const content = Buffer.from(this.store.subarray(0, this.length));
    this.clear();
    return content;
  }

  head(bytes: number): Buffer {
    return this.store.subarray(0, Math.min(bytes, this.length));
  }

  clear(): void {
    this.length = 0;
    // A large buffer is not kept for the connection's next (likely small) frame.
    if (this.store.length > 64 * 1024) this.store = Buffer.allocUnsafe(0);
  }
}

export function createMllpServer(options: MllpServerOptions): MllpServer {
  const maxFrameBytes = options.maxFrameBytes ?? MAX_MESSAGE_BYTES;
  const idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
  const frameDeadlineMs = options.frameDeadlineMs ?? 30_000;
  const maxConnections = options.maxConnections ?? 200;
  const maxPerAddress = options.maxConnectionsPerAddress ?? 20;
  const sockets = new Set<Socket>();
  const perAddress = new Map<string, number>();

  const server = createServer((socket) => {
    const peer: MllpPeer = { remoteAddress: socket.remoteAddress, remotePort: socket.remotePort };
    const address = socket.remoteAddress ?? '';
    const fromAddress = perAddress.get(address) ?? 0;
    if (sockets.size >= maxConnections || fromAddress >= maxPerAddress) {
      const reason =
        sockets.size >= maxConnections
          ? `connection refused: ${maxConnections} connections open`
          : `connection refused: ${maxPerAddress} connections open from this address`;
      options.onConnectionError?.(reason, peer);
      socket.on('error', () => {});
      socket.destroy();
      return;
    }
    sockets.add(socket);
    perAddress.set(address, fromAddress + 1);

    const content = new FrameBuffer();
    let inFrame = false;
    const pending: Buffer[] = [];
    let pendingBytes = 0;
    /** Bytes read but not yet framed, kept while too many frames wait for their answer. */
    let unread: Buffer | undefined;
    let answering = false;
    let done = false;

    const fail = (reason: string) => {
      if (!done) options.onConnectionError?.(reason, peer);
      done = true;
      socket.destroy();
    };
    // Idle: no frame under way and nothing answered for idleTimeoutMs. Bytes between frames (line
    // ends) do not count as activity, and within a frame the deadline runs instead, from its <VT>.
    let idle: NodeJS.Timeout | undefined;
    let deadline: NodeJS.Timeout | undefined;
    const watchIdle = () => {
      clearTimeout(idle);
      idle = setTimeout(() => fail('idle timeout'), idleTimeoutMs);
    };
    watchIdle();

    socket.on('close', () => {
      sockets.delete(socket);
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left > 0) perAddress.set(address, left);
      else perAddress.delete(address);
      clearTimeout(idle);
      clearTimeout(deadline);
    });
    socket.on('error', () => {
      // A reset by the peer is its business; the socket is closed either way.
    });

    const waiting = () => pending.length >= MAX_PENDING_FRAMES || pendingBytes > maxFrameBytes;

    /** Frames what arrived; stops (keeping the rest) while too many frames wait for their answer. */
    const consume = (chunk: Buffer) => {
      let at = 0;
      while (at < chunk.length && !done) {
        if (waiting()) {
          unread = chunk.subarray(at);
          socket.pause();
          return;
        }
        if (!inFrame) {
          // Line ends between frames are tolerated (some senders add them), as is the <CR> after <FS>.
          const byte = chunk[at]!;
          if (byte === CR || byte === 0x0a) {
            at++;
            continue;
          }
          if (byte !== VT) return fail('data outside an MLLP frame (no <VT> start block)');
          inFrame = true;
          at++;
          clearTimeout(idle);
          deadline = setTimeout(() => fail(`frame not complete within ${frameDeadlineMs} ms`), frameDeadlineMs);
          continue;
        }
        const end = chunk.indexOf(FS, at);
        const stop = end === -1 ? chunk.length : end;
        if (content.length + (stop - at) > maxFrameBytes) return tooLarge(chunk.subarray(at, stop));
        content.append(chunk.subarray(at, stop));
        if (end === -1) return;
        clearTimeout(deadline);
        inFrame = false;
        const message = content.take();
        pending.push(message);
        pendingBytes += message.length;
        at = end + 1;
        void answerNext();
      }
    };

    const tooLarge = (rest: Buffer) => {
      content.append(rest.subarray(0, Math.max(0, 4096 - content.length)));
      const ack = options.tooLarge?.(decodeFrame(content.head(4096)).text, peer);
      content.clear();
      done = true;
      clearTimeout(deadline);
      socket.pause();
      options.onConnectionError?.(`frame larger than ${maxFrameBytes} bytes`, peer);
      if (ack) socket.end(frame(ack));
      else socket.destroy();
      // A peer that neither reads the AR nor closes is closed after the idle time.
      watchIdle();
    };

    /** Waits until the peer has read what was written, so its answers are not queued without bound. */
    const drained = () =>
      new Promise<void>((resolve) => {
        if (!socket.writableNeedDrain || socket.destroyed) return resolve();
        const settle = () => {
          socket.off('drain', settle);
          socket.off('close', settle);
          resolve();
        };
        socket.on('drain', settle);
        socket.on('close', settle);
      });

    // Answers frames one at a time, in order, so answers come back in the order messages were sent.
    const answerNext = async () => {
      if (answering) return;
      answering = true;
      while (pending.length > 0 && !done) {
        const bytes = pending.shift()!;
        pendingBytes -= bytes.length;
        const decoded = decodeFrame(bytes);
        const reply = (answer: string) => {
          if (!done && !socket.destroyed) socket.write(frame(decoded.encode(answer)));
        };
        try {
          await options.handle(decoded.text, reply, peer);
        } catch (error) {
          fail(`handler failed: ${(error as Error).message}`);
        }
        if (!inFrame) watchIdle();
        // A handler that needs no I/O (a refusal) resolves in microtasks: without this, a flood of
        // frames would be answered in one turn of the event loop, and nothing else would run.
        await new Promise(setImmediate);
        // A peer that does not read its answers is not read from (nor answered) until it does;
        // if it never does, the idle timeout closes it.
        if (socket.writableNeedDrain) {
          socket.pause();
          await drained();
        }
        if (!waiting() && unread && !done) {
          const rest = unread;
          unread = undefined;
          consume(rest);
        }
        if (!waiting() && !unread && !done && socket.isPaused()) socket.resume();
      }
      answering = false;
    };

    socket.on('data', (chunk: Buffer) => {
      // Data read after a pause joins what waits to be framed.
      if (unread) unread = Buffer.concat([unread, chunk]);
      else consume(chunk);
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
