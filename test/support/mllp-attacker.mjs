// A hostile MLLP peer, run as its own process so its work does not share the API's event loop:
// `node mllp-attacker.mjs <config JSON file>`. It opens many idle connections, sends a 256 KiB frame one
// byte at a time, floods a connection it never reads, and sends a large authenticated message,
// while it measures how long GET /healthz takes. Prints one JSON line with what it saw.
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const { mllpPort, healthUrl, idleConnections, idleAddresses, trickleBytes, floodFrames, largeMessage } = config;
const VT = Buffer.from([0x0b]);
const END = Buffer.from([0x1c, 0x0d]);
const frame = (text) => Buffer.concat([VT, Buffer.from(text, 'latin1'), END]);

function open(localAddress) {
  return new Promise((resolve) => {
    const socket = connect({ port: mllpPort, host: '127.0.0.1', localAddress });
    const state = { socket, refused: false, closed: false, received: 0 };
    socket.on('error', () => {});
    socket.on('data', (chunk) => {
      state.received += chunk.length;
    });
    socket.on('close', () => {
      state.closed = true;
    });
    socket.once('connect', () => resolve(state));
  });
}

const latencies = [];
let healthFailures = 0;
let probing = true;
async function probeHealth() {
  while (probing) {
    const started = performance.now();
    try {
      const response = await fetch(healthUrl, { signal: AbortSignal.timeout(5000) });
      await response.arrayBuffer();
      if (response.status !== 200) healthFailures++;
      latencies.push(performance.now() - started);
    } catch {
      healthFailures++;
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const health = probeHealth();
  // 1. Idle connections, spread over loopback addresses (Linux routes all of 127.0.0.0/8 to lo).
  const idle = [];
  for (let index = 0; index < idleConnections; index++) idle.push(await open(`127.0.0.${2 + (index % idleAddresses)}`));
  await sleep(500);
  const idleOpen = idle.filter((state) => !state.closed).length;

  // 2. A frame of trickleBytes, one byte per write, each write waited for.
  const trickle = await open('127.0.0.200');
  trickle.socket.setNoDelay(true);
  const trickleStarted = performance.now();
  const body = Buffer.alloc(trickleBytes, 0x78);
  body.write('MSH|^~\\&|A|B|C|D|20250101||ADT^A01|T1|P|2.5.1\rNTE|1||', 0, 'latin1');
  const trickleFrame = Buffer.concat([VT, body, END]);
  let trickleSent = 0;
  for (; trickleSent < trickleFrame.length && !trickle.closed; trickleSent++)
    await new Promise((resolve) => trickle.socket.write(trickleFrame.subarray(trickleSent, trickleSent + 1), resolve));
  const trickleSeconds = (performance.now() - trickleStarted) / 1000;
  await sleep(500);

  // 3. A peer that never reads: floods small frames (each answered with an AR) and reads nothing.
  const flood = await open('127.0.0.201');
  flood.socket.pause();
  const floodFrame = frame('MSH|^~\\&|A|B|C|D|20250101||ADT^A01|F1|P|2.5.1');
  let floodWritten = 0;
  for (; floodWritten < floodFrames && !flood.closed; floodWritten++) {
    if (flood.socket.write(floodFrame)) continue;
    // Once the listener stops reading, the kernel's buffers fill and nothing drains: that is the point.
    const drained = await Promise.race([new Promise((resolve) => flood.socket.once('drain', () => resolve(true))), sleep(2000).then(() => false)]);
    if (!drained) break;
  }

  // 4. A large authenticated message, parsed and mapped by the listener.
  let largeAnswer = null;
  if (largeMessage) {
    const large = await open('127.0.0.202');
    large.socket.resume();
    let received = Buffer.alloc(0);
    large.socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
    });
    const started = performance.now();
    large.socket.write(frame(largeMessage));
    while (!received.includes(0x1c) && !large.closed && performance.now() - started < 60_000) await sleep(20);
    largeAnswer = { seconds: (performance.now() - started) / 1000, msa: /MSA\|(\w\w)/.exec(received.toString('latin1'))?.[1] ?? null };
    large.socket.destroy();
  }

  await sleep(1000);
  probing = false;
  await health;
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] * 10) / 10;
  const result = {
    idle: { attempted: idleConnections, open: idleOpen },
    trickle: {
      bytes: trickleFrame.length,
      sent: trickleSent,
      seconds: Math.round(trickleSeconds * 10) / 10,
      answered: trickle.received > 0,
      closed: trickle.closed,
    },
    flood: { framesWritten: floodWritten, answerBytesReceived: flood.received, closed: flood.closed },
    large: largeAnswer,
    healthz: { probes: latencies.length, failures: healthFailures, p50: at(0.5), p99: at(0.99), max: at(1) },
  };
  for (const state of [...idle, trickle, flood]) state.socket.destroy();
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
