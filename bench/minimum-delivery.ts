import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import postgres from 'postgres';
import { request } from 'undici';
import { generateApiKey } from '../platform/secrets';
import { signEnvelope } from '../webhooks/signing';
import type { MinimumDelivery } from './minimum-delivery-workflow';

const TASK_QUEUE = 'bench-minimum';
const SECRET = 'sbx_whsec_bench';

/**
 * The floor under a delivery (issue 32): what every delivery run as a workflow with one activity does,
 * with nothing of ours but the signature, beside the no-op ceiling, which does none of it. A POST to the
 * trigger's path (its bearer key looked up in a map), one INSERT recording the delivery, a workflow
 * started with the organization's fairness key and the event inline, the 202; then one activity that
 * signs the event, POSTs it and records the answer in one UPDATE. None of what ours adds: request
 * validation, logging, rate limit, idempotency, the claim check, the attempt log, search attributes, the
 * retry schedule. The event is one of ours (read from its delivery row), so both send the same bytes.
 * Its worker has the SDK's defaults, as the no-op's has.
 */
export async function startMinimumDelivery(options: {
  client: Client;
  temporalAddress: string;
  databaseUrl: string;
  receiverUrl: string;
  organizations: number;
}) {
  const { client, receiverUrl } = options;
  const sql = postgres(options.databaseUrl, { max: 10, onnotice: () => {} });
  const [ours] = await sql<{ envelope_body: string }[]>`select envelope_body from deliveries limit 1`;
  if (!ours) throw new Error('the minimum delivery sends one of our events: run a delivery of ours first');
  const body = ours.envelope_body;
  await sql`create table if not exists bench_minimum_deliveries (
    id text primary key, organization_id text not null, status text not null, response_status integer)`;
  const keys = Array.from({ length: options.organizations }, generateApiKey);
  const organizationsByHeader = new Map(keys.map((key, index) => [`Bearer ${key}`, `org_min_${index}`]));
  const workflowIdOf = (id: string) => `minimum-${id}`;

  async function accept(organizationId: string): Promise<string> {
    const id = `dlv_min_${randomUUID()}`;
    await sql`insert into bench_minimum_deliveries (id, organization_id, status) values (${id}, ${organizationId}, 'pending')`;
    const delivery: MinimumDelivery = { id, body };
    await client.workflow.start('minimumDeliveryWorkflow', {
      taskQueue: TASK_QUEUE,
      workflowId: workflowIdOf(id),
      args: [delivery],
      priority: { fairnessKey: organizationId },
    });
    return id;
  }

  const server = createServer((req, res) => {
    req.resume();
    const organizationId = organizationsByHeader.get(req.headers.authorization ?? '');
    if (req.method !== 'POST' || req.url !== '/v1/webhooks/trigger-mock-event') return void res.writeHead(404).end();
    if (!organizationId) return void res.writeHead(401).end();
    accept(organizationId).then(
      (id) => res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ id })),
      (error: unknown) => res.writeHead(500).end(String(error)),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  const connection = await NativeConnection.connect({ address: options.temporalAddress });
  const worker = await Worker.create({
    connection,
    taskQueue: TASK_QUEUE,
    workflowsPath: fileURLToPath(new URL('./minimum-delivery-workflow.ts', import.meta.url)),
    activities: {
      async sendOnce({ id, body }: MinimumDelivery) {
        const headers = signEnvelope({ deliveryId: id, body, secret: SECRET, timestampSeconds: Math.floor(Date.now() / 1000) });
        const response = await request(receiverUrl, { method: 'POST', headers, body });
        await response.body.dump();
        const status = response.statusCode < 300 ? 'succeeded' : 'failed';
        await sql`update bench_minimum_deliveries set status = ${status}, response_status = ${response.statusCode} where id = ${id}`;
      },
    },
  });
  const running = worker.run();
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    keys,
    workflowIdOf,
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await sql.end();
    },
  };
}
