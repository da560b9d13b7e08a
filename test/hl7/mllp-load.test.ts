import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningMllpListener } from '../../runtime/mllp';
import { tenantReceivingAt } from '../support/deliveries';
import { startTestMllpListener } from '../support/mllp-listener';
import { startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';

/**
 * Issue 23: a hostile MLLP peer must not take the API down. The API and the listener run in this
 * process, as in `npm start`; the peer runs in a process of its own (test/support/mllp-attacker.mjs)
 * and measures GET /healthz while it opens 300 idle connections, sends a 256 KiB frame a byte at a
 * time, floods a connection it never reads and sends a large authenticated message. The figures are
 * printed for the record (the machine is shared, so no speed is asserted); what is asserted is that
 * /healthz kept answering, the caps held and memory stayed bounded.
 */

const ATTACKER = fileURLToPath(new URL('../support/mllp-attacker.mjs', import.meta.url));

let service: TestService;
let receiver: TestReceiver;
let listener: RunningMllpListener;
beforeAll(async () => {
  service = await startTestService();
  receiver = await startReceiver();
  // Room for the 300 idle connections and the others beside them (30 addresses, 10 each: under the cap per address).
  listener = await startTestMllpListener(service, { HL7_MLLP_MAX_CONNECTIONS: 400 });
});
afterAll(async () => {
  await listener.close();
  await receiver.close();
  await service.stop();
});

/** A 256 KiB ORU^R01 (about 3,000 OBX), addressed to `identity` with its token. */
function largeResult(identity: { application: string; facility: string; token: string }): string {
  const head = `MSH|^~\\&|LAB|HOSP|${identity.application}|${identity.facility}|20250101120000+0000|${identity.token}|ORU^R01^ORU_R01|LOAD1|P|2.5.1\rPID|1||M1^^^HOSP^MR||Doe^Jane||19800101|F\rOBR|1||F1|58410-2^CBC^LN|||20250101`;
  const segments = [head];
  for (let size = head.length, index = 1; ; index++) {
    const line = `OBX|${index}|NM|718-7^Hemoglobin^LN||13.${index % 10}|g/dL^g/dL^UCUM|12-16|N|||F`;
    if (size + line.length + 1 > 256 * 1024) break;
    segments.push(line);
    size += line.length + 1;
  }
  return segments.join('\r');
}

describe('the MLLP listener under a hostile peer', () => {
  it('keeps /healthz answering and memory bounded through 300 idle connections, a byte-at-a-time 256 KiB frame, a peer that never reads and a 256 KiB message', async () => {
    const tenant = await tenantReceivingAt(service, receiver.url);
    const connection = await service.call('/v1/connections', { key: tenant.key, method: 'POST', body: { name: 'Load feed (synthetic)' } });
    const identity = await service.call(`/v1/sandbox/hl7/identities/${connection.body.id}`, {
      key: tenant.key,
      method: 'PUT',
      body: { receiving_application: 'LOAD', receiving_facility: 'TEST' },
    });
    const token = identity.body.mllp_token as string;

    const loop = monitorEventLoopDelay({ resolution: 10 });
    const heapBefore = process.memoryUsage().heapUsed;
    let heapPeak = heapBefore;
    const sampler = setInterval(() => {
      heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
    }, 100);
    loop.enable();
    const config = {
      mllpPort: listener.port,
      healthUrl: `${service.baseUrl}/healthz`,
      idleConnections: 300,
      idleAddresses: 30,
      trickleBytes: 256 * 1024,
      floodFrames: 50_000,
      largeMessage: largeResult({ application: 'LOAD', facility: 'TEST', token }),
    };
    let stdout: string;
    try {
      const file = join(mkdtempSync(join(tmpdir(), 'mllp-attack-')), 'config.json');
      writeFileSync(file, JSON.stringify(config));
      ({ stdout } = await promisify(execFile)(process.execPath, [ATTACKER, file], { maxBuffer: 1024 * 1024, timeout: 240_000 }));
      rmSync(dirname(file), { recursive: true, force: true });
    } finally {
      clearInterval(sampler);
      loop.disable();
    }
    const seen = JSON.parse(stdout.trim());
    const figures = {
      ...seen,
      eventLoopDelayMs: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
      heapGrowthMiB: Math.round((heapPeak - heapBefore) / 1024 / 1024),
    };
    // The record of this run (the issue asks for /healthz under 100 ms; on this shared machine it is measured, not asserted).
    console.log(`MLLP under a hostile peer: ${JSON.stringify(figures)}`);

    expect(seen.healthz.failures).toBe(0);
    expect(seen.healthz.probes).toBeGreaterThan(10);
    expect(seen.idle.open).toBe(300);
    expect(seen.large).toMatchObject({ msa: expect.stringMatching(/^A[AE]$/) });
    // Bounded: the frames buffered are capped per connection; the large message's Bundle is built in a worker thread.
    expect(figures.heapGrowthMiB).toBeLessThan(256);
  }, 300_000);
});
