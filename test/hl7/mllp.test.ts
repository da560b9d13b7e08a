import { connect, type Socket } from 'node:net';
import { Client, type InboundResponse, Message } from 'node-hl7-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createMllpServer, FS, frame, type MllpServer, VT } from '../../hl7/mllp';
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
async function start(options: { maxFrameBytes?: number; idleTimeoutMs?: number } = {}) {
  const closed: string[] = [];
  const handled: string[] = [];
  server = createMllpServer({
    handle: async (message) => {
      handled.push(message);
      if (message.includes('THROW')) throw new Error('handler broke');
      return processHl7(message).ack.er7;
    },
    tooLarge: (head) => oversizeAck(head, Number.POSITIVE_INFINITY).ack.er7,
    onConnectionError: (reason) => closed.push(reason),
    ...options,
  });
  const port = await server.listen(0, '127.0.0.1');
  return { port, closed, handled };
}

/** A raw TCP peer: what it receives, and whether the server closed it. */
async function rawPeer(port: number) {
  const socket: Socket = connect(port, '127.0.0.1');
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

  it('drops a half frame when the peer goes, and closes idle connections', async () => {
    const { port, closed, handled } = await start({ idleTimeoutMs: 300 });
    const half = await rawPeer(port);
    half.socket.write(Buffer.concat([Buffer.from([VT]), Buffer.from('MSH|^~\\&|A|B')]));
    await waitUntil(() => (half.closed() ? true : undefined), { what: 'the idle half-frame connection closed' });
    expect(closed).toContain('idle timeout');
    expect(handled).toEqual([]);
    const gone = await rawPeer(port);
    gone.socket.end(Buffer.concat([Buffer.from([VT]), Buffer.from('MSH|^~\\&|A|B')]));
    await waitUntil(() => (gone.closed() ? true : undefined), { what: 'the half-frame peer gone' });
    expect(handled).toEqual([]);
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
