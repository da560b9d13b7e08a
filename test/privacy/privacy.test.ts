import { connect } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FS, frame, VT } from '../../hl7/mllp';
import { parseHl7 } from '../../hl7/parse';
import { renderTemplate } from '../../hl7/templates';
import { executeRows } from '../../platform/database';
import { createLogger } from '../../platform/logger';
import { passesLuhn } from '../../privacy/guard';
import { deliveryWorkflowId } from '../../workflows/delivery/contract';
import { tenantReceivingAt } from '../support/deliveries';
import { startReceiver, type TestReceiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { waitUntil } from '../support/wait';

/**
 * Issue 31, as a partner pasting a production message by mistake would see it: real-looking
 * identifiers sent over HTTP and MLLP are masked before anything keeps them. The delivered envelope
 * (at a real receiver), every table of the test database, the workflow histories and the logs are
 * searched for the values sent. Every value here is made up for the test.
 */

/** A Luhn-valid 16-digit number that no other test sends, printed in groups of four. */
const CARD = (() => {
  const base = '455673758689985';
  const check = [...'0123456789'].find((digit) => passesLuhn(base + digit))!;
  return `${base}${check}`.replace(/(\d{4})(?=\d)/g, '$1 ');
})();
const SSN = '372-61-4815';
const MBI = '7QW9-PK3-RM41';
const LICENCE = 'D7719042';
/** Every form in which a sent value could be kept (with and without its separators). */
const RAW = [SSN, SSN.replaceAll('-', ''), MBI, MBI.replaceAll('-', ''), LICENCE, CARD, CARD.replaceAll(' ', '')];

/** The ADT^A01 template with the identifiers above in PID-3, PID-19, PID-20 and an NTE. */
function realLookingMessage(msh: Record<number, string> = {}): string {
  const [header, ...rest] = renderTemplate('adt-a01')!.er7.split('\r');
  const mshFields = header!.split('|');
  for (const [n, value] of Object.entries(msh)) mshFields[Number(n) - 1] = value;
  const segments = rest.map((line) => {
    if (!line.startsWith('PID|')) return line;
    const fields = line.split('|');
    fields[3] = `${fields[3]}~${MBI}^^^CMS^MC`;
    while (fields.length <= 20) fields.push('');
    fields[19] = SSN;
    fields[20] = `${LICENCE}^OR^20300101`;
    return fields.join('|');
  });
  return [mshFields.join('|'), ...segments, `NTE|1||Copay taken on card ${CARD}`].join('\r');
}
const MASKED_FIELDS = ['PID^1^3', 'PID^1^19', 'PID^1^20', 'NTE^1^3'];

const lines: string[] = [];
let service: TestService;
let receiver: TestReceiver;
beforeAll(async () => {
  const logger = createLogger('debug', { pretty: false, destination: { write: (line: string) => lines.push(line) } });
  service = await startTestService({}, { logger });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await service.stop();
});

/** Sends one framed message to the service's MLLP listener and returns the first answer. */
async function overMllp(text: string): Promise<string> {
  const socket = connect(service.mllpPort!, '127.0.0.1');
  let received = '';
  socket.on('data', (chunk) => {
    received += chunk.toString('utf8');
  });
  socket.on('error', () => {});
  try {
    socket.write(frame(text));
    return await waitUntil(
      () =>
        received.includes(String.fromCharCode(FS)) ? received.split(String.fromCharCode(FS))[0]!.replace(String.fromCharCode(VT), '') : undefined,
      {
        what: 'the ACK over MLLP',
        timeoutMs: 30_000,
      },
    );
  } finally {
    socket.destroy();
  }
}

/** A connection of the tenant with an HL7 identity (strict or lenient) and its MLLP token. */
async function mllpIdentity(key: string, conformance: 'lenient' | 'strict') {
  const connection = await service.call('/v1/connections', { key, method: 'POST', body: { name: `MLLP ${conformance} (synthetic)` } });
  const identity = { receiving_application: `EHR-${connection.body.id.slice(-8)}`, receiving_facility: 'PRIVACY', conformance };
  const put = await service.call(`/v1/sandbox/hl7/identities/${connection.body.id}`, { key, method: 'PUT', body: identity });
  expect(put.status).toBe(200);
  return { 5: identity.receiving_application, 6: identity.receiving_facility, 8: put.body.mllp_token as string };
}

const errs = (ack: string) =>
  parseHl7(ack)
    .all('ERR')
    .map((err) => ({ location: err.field(2).raw, severity: err.get(4), message: err.get(8) }));

/** Every text a workflow's history holds, payloads decoded. */
async function historyText(workflowId: string): Promise<string> {
  const history = await service.temporal.workflow.getHandle(workflowId).fetchHistory();
  const texts: string[] = [];
  const walk = (value: unknown, depth: number): void => {
    if (depth > 40 || value === null || value === undefined) return;
    if (value instanceof Uint8Array) texts.push(Buffer.from(value).toString('utf8'));
    else if (typeof value === 'string') texts.push(value);
    else if (Array.isArray(value)) for (const item of value) walk(item, depth + 1);
    else if (typeof value === 'object') for (const item of Object.values(value)) walk(item, depth + 1);
  };
  walk(history, 0);
  return texts.join('\n');
}

/** Rows of a raw query on the test service's database. */
function rowsOf<T>(query: ReturnType<typeof sql>): Promise<T[]> {
  return executeRows<T>(service.database.db, query);
}

/** The tables of the test database holding any of `values` in any column, with how many rows. */
async function tablesHolding(values: string[]): Promise<Record<string, number>> {
  const tables = await rowsOf<{ table_name: string }>(
    sql`select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`,
  );
  expect(tables.length).toBeGreaterThan(15);
  const patterns = sql.join(
    values.map((value) => sql`${`%${value}%`}`),
    sql`, `,
  );
  const found: Record<string, number> = {};
  for (const { table_name } of tables) {
    const [row] = await rowsOf<{ count: number }>(
      sql`select count(*)::int as count from ${sql.identifier(table_name)} t where t::text like any (array[${patterns}])`,
    );
    if (row!.count > 0) found[table_name] = row!.count;
  }
  return found;
}

describe('real-looking identifiers sent by mistake', () => {
  it('are masked over HTTP and MLLP: one W per field, and the envelope, every table, the workflow histories and the logs hold none of them', async () => {
    const tenant = await tenantReceivingAt(service, receiver.url);

    const http = await service.call('/v1/sandbox/hl7/inject', {
      key: tenant.key,
      method: 'POST',
      body: { message: realLookingMessage() },
      headers: { 'Idempotency-Key': `privacy-${Date.now()}` },
    });
    expect(http.status, JSON.stringify(http.body)).toBe(202);
    expect(http.body.ack.code).toBe('AA');
    const privacyWarnings = (warnings: { location: string; message: string }[]) => warnings.filter((warning) => /masked to/.test(warning.message));
    expect(privacyWarnings(http.body.warnings).map((warning) => warning.location)).toEqual(MASKED_FIELDS);
    expect(
      errs(http.body.ack.er7)
        .filter((err) => /masked to/.test(err.message))
        .map((err) => err.severity),
    ).toEqual(['W', 'W', 'W', 'W']);

    const identity = await mllpIdentity(tenant.key, 'lenient');
    const ack = await overMllp(realLookingMessage(identity));
    expect(parseHl7(ack).segment('MSA')!.get(1)).toBe('AA');
    const mllpWarnings = errs(ack).filter((err) => /masked to/.test(err.message));
    expect(mllpWarnings.map((err) => [err.location, err.severity])).toEqual(MASKED_FIELDS.map((field) => [field, 'W']));
    const mllpDeliveryId = /dlv_\w+/.exec(parseHl7(ack).segment('MSA')!.get(3))![0];

    const requests = await receiver.waitForRequests(2);
    for (const request of requests) {
      for (const raw of RAW) expect(request.body).not.toContain(raw);
      expect(request.body).toContain('XXX-XX-4815');
      expect(request.body).toContain('XXXX9042');
    }

    // The MPI match and the aggregator query take identifiers too: sent here, so the scan below covers them.
    const match = await service.call('/v1/sandbox/mpi/match', {
      key: tenant.key,
      method: 'POST',
      body: { family: 'Ruecker', given: 'Petra', identifiers: [{ system: 'http://hl7.org/fhir/sid/us-ssn', value: SSN }] },
    });
    expect(match.status).toBe(200);
    expect(JSON.stringify(match.body)).not.toContain(SSN);
    const outcome = match.body.entry.find((entry: any) => entry.search.mode === 'outcome');
    expect(outcome.resource.issue).toMatchObject([{ severity: 'warning', code: 'security', expression: ['Patient.identifier[0].value'] }]);
    const query = await service.call('/v1/sandbox/aggregator/query', {
      key: tenant.key,
      method: 'POST',
      body: {
        patient: {
          family: 'Ruecker',
          given: 'Petra',
          birth_date: '1958-12-12',
          identifiers: [{ system: 'http://hl7.org/fhir/sid/us-mbi', value: MBI }],
        },
        purpose_of_use: 'treatment',
      },
      headers: { 'Idempotency-Key': `privacy-aq-${Date.now()}` },
    });
    expect([200, 202]).toContain(query.status);
    expect(query.body.warnings).toMatchObject([{ path: 'body.patient.identifiers[0].value' }]);

    const httpDeliveryId = http.body.delivery.id as string;
    for (const deliveryId of [httpDeliveryId, mllpDeliveryId]) {
      const history = await historyText(deliveryWorkflowId(deliveryId));
      for (const raw of RAW) expect(history).not.toContain(raw);
      // Not even masked: the envelope travels as a claim check (webhooks/claim-check.ts), the history holds its id.
      expect(history).toContain(deliveryId);
      expect(history).not.toContain('XXX-XX-4815');
      expect(history).not.toContain('Ruecker');
    }
    const queryHistory = await historyText(query.body.workflow_id);
    for (const raw of RAW) expect(queryHistory).not.toContain(raw);
    // Not even masked: the query is recorded before its workflow starts, which carries its id only.
    expect(queryHistory).toContain(query.body.id);
    expect(queryHistory).not.toContain(MBI.slice(-4));

    expect(await tablesHolding(RAW)).toEqual({});
    const logged = lines.join('\n');
    // The requests were logged (by id, method, path and status), their content was not.
    expect(logged).toContain('/v1/sandbox/hl7/inject');
    for (const raw of RAW) expect(logged).not.toContain(raw);
  });

  it('are refused in strict mode (AE, 422) and when the organization refuses them, with one E per field and nothing delivered', async () => {
    const own = await startReceiver();
    const tenant = await tenantReceivingAt(service, own.url);

    const strictHttp = await service.call('/v1/sandbox/hl7/inject?conformance=strict', {
      key: tenant.key,
      method: 'POST',
      body: { message: realLookingMessage() },
    });
    expect(strictHttp.status).toBe(422);
    expect(strictHttp.body.ack.code).toBe('AE');
    const refusedAt = (errors: { location: string; message: string }[]) =>
      errors.filter((error) => /synthetic data only, so it is refused/.test(error.message)).map((error) => error.location);
    expect(refusedAt(strictHttp.body.errors)).toEqual(MASKED_FIELDS);

    const strictIdentity = await mllpIdentity(tenant.key, 'strict');
    const strictAck = await overMllp(realLookingMessage(strictIdentity));
    expect(parseHl7(strictAck).segment('MSA')!.get(1)).toBe('AE');
    expect(refusedAt(errs(strictAck))).toEqual(MASKED_FIELDS);

    const set = await service.call('/v1/sandbox/privacy', { key: tenant.key, method: 'PUT', body: { real_identifiers: 'refuse' } });
    expect(set.body).toEqual({ real_identifiers: 'refuse' });
    const refused = await service.call('/v1/sandbox/hl7/inject', { key: tenant.key, method: 'POST', body: { message: realLookingMessage() } });
    expect(refused.status).toBe(422);
    expect(refusedAt(refused.body.errors)).toEqual(MASKED_FIELDS);
    const lenientIdentity = await mllpIdentity(tenant.key, 'lenient');
    expect(
      parseHl7(await overMllp(realLookingMessage(lenientIdentity)))
        .segment('MSA')!
        .get(1),
    ).toBe('AE');
    const connection = await service.call('/v1/connections', { key: tenant.key, method: 'POST', body: { name: `Billing for ${SSN}` } });
    expect(connection.status).toBe(422);
    expect(connection.body).toMatchObject({ code: 'real_identifier_refused', errors: [{ path: 'body.name' }] });

    expect(own.requests).toEqual([]);
    await own.close();
  });

  it('pass never-issued SSNs and reserved e-mail domains unchanged, with no warning', async () => {
    const tenant = await tenantReceivingAt(service, receiver.url);
    for (const ssn of ['999-12-3456', '900-55-1234', '000-12-3456', '666-12-3456', '123-00-4567', '123-45-0000']) {
      const [header, ...rest] = renderTemplate('adt-a01')!.er7.split('\r');
      const text = [header, ...rest.map((line) => (line.startsWith('PID|') ? `${line}|||${ssn}` : line))].join('\r');
      const answer = await service.call('/v1/sandbox/hl7/inject', { key: tenant.key, method: 'POST', body: { message: text } });
      expect(answer.status).toBe(202);
      expect(answer.body.warnings.filter((warning: { message: string }) => /masked/.test(warning.message))).toEqual([]);
      const delivered = await waitUntil(
        () => receiver.requests.find((request) => request.headers['x-service-delivery-id'] === answer.body.delivery.id),
        {
          what: `the delivery carrying ${ssn}`,
        },
      );
      const patient = JSON.parse(delivered.body).resource.entry.find((entry: any) => entry.resource.resourceType === 'Patient').resource;
      expect(patient.identifier).toContainEqual(expect.objectContaining({ system: 'http://hl7.org/fhir/sid/us-ssn', value: ssn }));
      expect(delivered.body).toContain('petra.ruecker1@mail.example');
    }
  });
});
