import { connect, type Socket } from 'node:net';
import { Client, type InboundResponse, Message } from 'node-hl7-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createMllpServer, FS, frame, type MllpServer, type MllpServerOptions, VT } from '../../hl7/mllp';
import { parseHl7 } from '../../hl7/parse';
import { oversizeAck, processHl7 } from '../../hl7/process';
import { renderTemplate } from '../../hl7/templates';
import { waitUntil } from '../support/wait';

let server: MllpServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A listener answering with the real pipeline's ACK, and what it was told about closed connections. */
async function start(options: Partial<Omit<MllpServerOptions, 'handle'>> = {}) {
  const closed: string[] = [];
  const handled: string[] = [];
  server = createMllpServer({
    handle: async (message, reply) => {
      handled.push(message);
      if (message.includes('THROW')) throw new Error('handler broke');
      reply(processHl7(message).ack.er7);
    },
    tooLarge: (head) => oversizeAck(head, Number.POSITIVE_INFINITY).ack.er7,
    onConnectionError: (reason) => closed.push(reason),
    ...options,
  });
  const port = await server.listen(0, '127.0.0.1');
  return { port, closed, handled };
}

/** A raw TCP peer: what it receives, and whether the server closed it. */
async function rawPeer(port: number, localAddress = '127.0.0.1') {
  const socket: Socket = connect({ port, host: '127.0.0.1', localAddress });
  await new Promise((resolve) => socket.once('connect', resolve));
  let received = Buffer.alloc(0);
  let ended = false;
  socket.on('data', (chunk) => {
    received = Buffer.concat([received, chunk]);
  });
  socket.on('error', () => {});
  socket.on('close', () => {
    ended = true;
  });
  return {
    socket,
    /** The frames received so far, unframed, as bytes. */
    received: () => {
      const frames: Buffer[] = [];
      for (let start = received.indexOf(VT); start !== -1; ) {
        const end = received.indexOf(FS, start);
        if (end === -1) break;
        frames.push(received.subarray(start + 1, end));
        start = received.indexOf(VT, end);
      }
      return frames;
    },
    /** The ACKs received so far, unframed. */
    acks: () =>
      received
        .toString('utf8')
        .split(String.fromCharCode(FS, 0x0d))
        .filter(Boolean)
        .map((framed) => framed.replace(String.fromCharCode(VT), '')),
    closed: () => ended,
  };
}

describe('MLLP listener', () => {
  it('answers a real MLLP client (node-hl7-client) with the ACK over TCP', async () => {
    const { port } = await start();
    const text = renderTemplate('adt-a01')!.er7;
    const acks: Message[] = [];
    const client = new Client({ host: '127.0.0.1' });
    const connection = client.createConnection({ port, maxAttempts: 1 }, async (response: InboundResponse) => {
      acks.push(response.getMessage());
    });
    try {
      await connection.sendMessage(new Message({ text }));
      const [ack] = await waitUntil(() => (acks.length ? acks : undefined), { what: 'the ACK over MLLP' });
      expect(ack!.get('MSA.1').toString()).toBe('AA');
      expect(ack!.get('MSA.2').toString()).toBe(parseHl7(text).header.get(10));
    } finally {
      await connection.close();
    }
  });

  it('answers frames in order, split across packets or several per packet, on one connection', async () => {
    const { port } = await start();
    const peer = await rawPeer(port);
    const a = renderTemplate('adt-a01')!.er7;
    const b = renderTemplate('oru-r01')!.er7;
    const both = Buffer.concat([frame(a), Buffer.from('\r\n'), frame(b)]);
    // One byte at a time for the first 50 bytes, then the rest at once.
    for (let index = 0; index < 50; index++) peer.socket.write(both.subarray(index, index + 1));
    peer.socket.write(both.subarray(50));
    const acks = await waitUntil(() => (peer.acks().length === 2 ? peer.acks() : undefined), { what: 'two ACKs', lastSeen: peer.acks });
    expect(acks.map((ack) => parseHl7(ack).segment('MSA')!.get(2))).toEqual([parseHl7(a).header.get(10), parseHl7(b).header.get(10)]);
    expect(peer.closed()).toBe(false);
    peer.socket.destroy();
  });

  it('answers AR to a frame that is not HL7, and AE with the location to one that cannot be processed', async () => {
    const { port } = await start();
    const peer = await rawPeer(port);
    peer.socket.write(frame('hello, is this HL7?'));
    // An admission without its PID: no patient to admit.
    const withoutPatient = renderTemplate('adt-a01')!
      .er7.split('\r')
      .filter((segment) => !segment.startsWith('PID|'))
      .join('\r');
    peer.socket.write(frame(withoutPatient));
    const acks = await waitUntil(() => (peer.acks().length === 2 ? peer.acks() : undefined), { what: 'two ACKs', lastSeen: peer.acks });
    const [notHl7, bad] = acks.map((ack) => parseHl7(ack));
    expect(notHl7!.segment('MSA')!.get(1)).toBe('AR');
    expect(bad!.segment('MSA')!.get(1)).toBe('AE');
    expect(bad!.segment('ERR')!.field(2).raw).toBe('PID');
    peer.socket.destroy();
  });

  it('closes a connection that sends data outside a frame, and keeps serving others', async () => {
    const { port, closed } = await start();
    const garbage = await rawPeer(port);
    garbage.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await waitUntil(() => (garbage.closed() ? true : undefined), { what: 'the garbage connection closed' });
    expect(closed).toContain('data outside an MLLP frame (no <VT> start block)');
    const good = await rawPeer(port);
    good.socket.write(frame(renderTemplate('adt-a08')!.er7));
    await waitUntil(() => (good.acks().length === 1 ? true : undefined), { what: 'an ACK after the garbage' });
    good.socket.destroy();
  });

  it('answers AR and closes when a frame outgrows the limit', async () => {
    const { port, closed } = await start({ maxFrameBytes: 4096 });
    const peer = await rawPeer(port);
    const text = renderTemplate('adt-a01')!.er7;
    peer.socket.write(Buffer.concat([Buffer.from([VT]), Buffer.from(`${text}\rZZZ|${'x'.repeat(8192)}`)]));
    await waitUntil(() => (peer.closed() ? true : undefined), { what: 'the oversized connection closed' });
    const [ack] = peer.acks();
    expect(parseHl7(ack!).segment('MSA')!.get(1)).toBe('AR');
    expect(parseHl7(ack!).segment('MSA')!.get(2)).toBe(parseHl7(text).header.get(10));
    expect(closed).toContain('frame larger than 4096 bytes');
  });

  it('drops a half frame when the peer goes, and closes a connection idle between frames', async () => {
    const { port, closed, handled } = await start({ idleTimeoutMs: 300 });
    const idle = await rawPeer(port);
    idle.socket.write(frame(renderTemplate('adt-a08')!.er7));
    await waitUntil(() => (idle.acks().length === 1 ? true : undefined), { what: 'the ACK before the idle time' });
    await waitUntil(() => (idle.closed() ? true : undefined), { what: 'the idle connection closed' });
    expect(closed).toContain('idle timeout');
    const gone = await rawPeer(port);
    gone.socket.end(Buffer.concat([Buffer.from([VT]), Buffer.from('MSH|^~\\&|A|B')]));
    await waitUntil(() => (gone.closed() ? true : undefined), { what: 'the half-frame peer gone' });
    expect(handled).toHaveLength(1);
  });

  it('closes a connection whose frame is not complete by its deadline, however its bytes trickle in', async () => {
    const { port, closed, handled } = await start({ idleTimeoutMs: 60_000, frameDeadlineMs: 500 });
    const slow = await rawPeer(port);
    slow.socket.write(Buffer.from([VT]));
    // A byte every 20 ms: each would restart an idle timer, none moves the frame's deadline.
    const text = Buffer.from(renderTemplate('adt-a01')!.er7);
    let sent = 0;
    const trickle = setInterval(() => {
      if (!slow.closed() && sent < text.length) slow.socket.write(text.subarray(sent, ++sent));
    }, 20);
    try {
      await waitUntil(() => (slow.closed() ? true : undefined), { what: 'the slow frame closed' });
    } finally {
      clearInterval(trickle);
    }
    expect(closed).toContain('frame not complete within 500 ms');
    expect(handled).toEqual([]);
    expect(sent).toBeLessThan(text.length);
  });

  it('refuses connections beyond the cap per address and in total, and serves again once some close', async () => {
    const { port, closed } = await start({ maxConnectionsPerAddress: 2, maxConnections: 3 });
    // Linux routes all of 127.0.0.0/8 to loopback, so peers can come from several addresses.
    const peers = [await rawPeer(port), await rawPeer(port), await rawPeer(port), await rawPeer(port, '127.0.0.2'), await rawPeer(port, '127.0.0.3')];
    await waitUntil(() => (peers.filter((peer) => peer.closed()).length === 2 ? true : undefined), { what: 'two refused connections' });
    expect(peers.map((peer) => peer.closed())).toEqual([false, false, true, false, true]);
    expect(closed).toEqual(['connection refused: 2 connections open from this address', 'connection refused: 3 connections open']);
    peers[0]!.socket.destroy();
    await waitUntil(() => (peers[0]!.closed() ? true : undefined), { what: 'the first peer gone' });
    const next = await waitUntil(
      async () => {
        const candidate = await rawPeer(port, '127.0.0.3');
        candidate.socket.write(frame(renderTemplate('adt-a08')!.er7));
        await waitUntil(() => (candidate.acks().length === 1 || candidate.closed() ? true : undefined), { what: 'an answer or a close' });
        return candidate.acks().length === 1 ? candidate : undefined;
      },
      { what: 'a connection accepted once one closed' },
    );
    for (const peer of [...peers, next]) peer.socket.destroy();
  });

  it('takes a 256 KiB frame sent a byte at a time, and answers it', async () => {
    const { port, handled } = await start();
    const peer = await rawPeer(port);
    peer.socket.setNoDelay(true);
    const head = renderTemplate('adt-a08')!.er7;
    const text = `${head}\r${'NTE|1||'.padEnd(255, 'x')}`.padEnd(256 * 1024 - 300, 'y');
    const bytes = frame(text);
    for (let index = 0; index < bytes.length; index++) {
      // Waiting for the kernel now and then keeps each byte its own segment, as a slow sender's would be.
      if (!peer.socket.write(bytes.subarray(index, index + 1))) await new Promise((resolve) => peer.socket.once('drain', resolve));
    }
    await waitUntil(() => (peer.acks().length === 1 ? true : undefined), { what: 'the ACK of the trickled frame', timeoutMs: 60_000 });
    expect(handled).toEqual([text]);
    peer.socket.destroy();
  });

  it('stops reading from a peer that does not read its answers, and closes it when idle', async () => {
    const answered: number[] = [];
    const closed: string[] = [];
    server = createMllpServer({
      // Each answer is 64 KiB, so a peer that reads none fills the socket's buffers after a few.
      handle: async (message, reply) => {
        answered.push(message.length);
        reply(`MSH|^~\\&|A\rNTE|1||${'z'.repeat(64 * 1024)}`);
      },
      idleTimeoutMs: 1500,
      onConnectionError: (reason) => closed.push(reason),
    });
    const port = await server.listen(0, '127.0.0.1');
    const peer = connect(port, '127.0.0.1');
    await new Promise((resolve) => peer.once('connect', resolve));
    peer.on('error', () => {});
    peer.pause();
    // 2,000 frames: 128 MiB of answers if all were answered. The kernel's buffers take the frames.
    const message = frame(renderTemplate('adt-a08')!.er7);
    for (let index = 0; index < 2000; index++) peer.write(message);
    await waitUntil(() => (closed.includes('idle timeout') ? true : undefined), { what: 'the non-reading peer closed', timeoutMs: 30_000 });
    // The kernel's socket buffers hold a few MiB of answers; the server stopped answering (and reading) long before 2,000.
    expect(answered.length).toBeLessThan(400);
    peer.destroy();
  });

  it('decodes each frame by its MSH-18 (ASCII, 8859/1, UNICODE UTF-8), and answers in the same encoding', async () => {
    const handled: string[] = [];
    server = createMllpServer({
      handle: async (message, reply) => {
        handled.push(message);
        reply(`MSH|^~\\&|ECHO\rNTE|1||${parseHl7(message).segment('PID')!.get(5)}`);
      },
    });
    const peer = await rawPeer(await server.listen(0, '127.0.0.1'));
    const message = (charset: string, name: string) =>
      `MSH|^~\\&|LAB|HOSP|SANDBOX|SYNTHETIC|20250101120000||ADT^A08^ADT_A01|CS1|P|2.5.1|||||USA|${charset}\rEVN|A08|20250101120000\rPID|1||M1^^^HOSP^MR||${name}^Zoë||19800101|F\rPV1|1|O`;
    const latin1 = message('8859/1', 'Müller');
    const utf8 = message('UNICODE UTF-8', 'Jiménez');
    const unlabelled = message('', 'Łukasiewicz');
    for (const [text, encoding] of [
      [latin1, 'latin1'],
      [utf8, 'utf8'],
      [unlabelled, 'utf8'],
    ] as const)
      peer.socket.write(frame(Buffer.from(text, encoding)));
    await waitUntil(() => (handled.length === 3 ? true : undefined), { what: 'three frames handled' });
    expect(handled).toEqual([latin1, utf8, unlabelled]);
    const answers = await waitUntil(() => (peer.received().length >= 3 ? peer.received() : undefined), { what: 'three answers' });
    expect(answers[0]!.includes(Buffer.from('|Müller', 'latin1'))).toBe(true);
    expect(answers[1]!.includes(Buffer.from('|Jiménez', 'utf8'))).toBe(true);
    expect(answers[2]!.includes(Buffer.from('|Łukasiewicz', 'utf8'))).toBe(true);
    peer.socket.destroy();
  });

  it('closes the connection, not the listener, when the handler fails', async () => {
    const { port, closed } = await start();
    const peer = await rawPeer(port);
    peer.socket.write(frame('MSH|^~\\&|THROW'));
    await waitUntil(() => (peer.closed() ? true : undefined), { what: 'the connection closed' });
    expect(closed).toContain('handler failed: handler broke');
    const next = await rawPeer(port);
    next.socket.write(frame(renderTemplate('adt-a01')!.er7));
    await waitUntil(() => (next.acks().length === 1 ? true : undefined), { what: 'an ACK from the same listener' });
    next.socket.destroy();
  });
});
