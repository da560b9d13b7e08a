import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import type { BulkExport } from '../../drizzle/schema';
import { FhirError, operationOutcome } from '../../fhir/operation-outcome';
import type { FhirStore } from '../../fixtures/store';
import { groupMembers, levelTypes } from '../../interop/bulk-export/files';
import { deleteExport, exportFile, exportFileList, findExport, recordNewExport } from '../../interop/bulk-export/records';
import { type ExportRequest, parseKickOff } from '../../interop/bulk-export/request';
import type { ExportLevel } from '../../interop/bulk-export/vocabulary';
import type { Config } from '../../platform/config';
import type { Database } from '../../platform/database';
import { isId, newId } from '../../platform/ids';
import { WorkflowClosedError, type WorkflowGateway } from '../../platform/workflow-gateway';
import { SMART_PATHS, type SmartUrls } from '../../smart/endpoints';
import { permission } from '../../smart/scopes';
import { exportSearchAttributes, exportWorkflowId } from '../../workflows/export/contract';
import { exportWorkflow } from '../../workflows/export/workflow';

/** Where an export's status is polled and its files are read, below the FHIR base. */
export const BULK_EXPORT_PATHS = {
  status: '/bulk-export/:exportId',
  file: '/bulk-export/:exportId/:file',
} as const;

/**
 * Until it ends, an export expires this long after its kick-off: one whose workflow never started
 * (the process stopped in between) or was terminated is then purged like an expired one. The slowest
 * export (the slow chaos at its maximum before each type) ends well within it.
 */
const ABANDONED_AFTER_MS = 7 * 24 * 60 * 60 * 1000;

/** Seconds a client is asked to wait between polls of a running export. */
const RETRY_AFTER_SECONDS = 2;
const FILE_NAME = /^[A-Za-z]{1,64}(?:-error)?-\d{1,6}\.ndjson$/;

/**
 * FHIR Bulk Data 2.0 `$export` (docs/api/bulk-data.md): kick-off at system, Patient and Group level,
 * the status URL (poll, DELETE to cancel) and the NDJSON files. Each export is a workflow,
 * `export-<id>`, that writes its files into Postgres; every request needs a system-level SMART token
 * of the client that started the export (another client's export is 404, as if it did not exist), and
 * a file is read only with scopes that allow its type.
 */
export function bulkExportRouter({
  db,
  fhirStore,
  workflows,
  urls,
  config,
  withToken,
  jsonOnly,
}: {
  db: Database;
  fhirStore: FhirStore;
  workflows: WorkflowGateway;
  urls: SmartUrls;
  config: Config;
  withToken: RequestHandler;
  /** The FHIR endpoint's Accept check (JSON), for the kick-off and status requests; files check their own. */
  jsonOnly: RequestHandler;
}): Router {
  const router = express.Router();
  const base = SMART_PATHS.fhirBase;
  const statusUrl = (id: string) => `${urls.fhirBase}${BULK_EXPORT_PATHS.status.replace(':exportId', id)}`;
  const compartmentTypes = levelTypes(fhirStore, 'patient');
  const typesOf = (level: ExportLevel) => (level === 'system' ? fhirStore.supportedTypes : compartmentTypes);

  /** A system-level token (SMART Backend Services) with system/ read scopes; its organization owns the exports it starts. */
  const systemAccess: RequestHandler = (_req, res, next) => {
    const grant = res.locals.grant!;
    if (grant.context !== 'system' || systemReadableTypes(grant.scope, fhirStore.supportedTypes).length === 0) {
      throw new FhirError(
        403,
        'forbidden',
        `Bulk export needs a system-level token (SMART Backend Services: client_credentials) with system/ read scopes, e.g. system/*.rs; this token's scopes are ${grant.scope}.`,
        { 'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${grant.scope}"` },
      );
    }
    next();
  };

  const kickOff =
    (level: ExportLevel): RequestHandler =>
    async (req, res) => {
      if (!/\brespond-async\b/i.test(req.header('prefer') ?? '')) {
        throw new FhirError(400, 'invalid', 'A bulk export is asynchronous: send the header Prefer: respond-async.');
      }
      const organizationId = res.locals.grant!.organizationId;
      const groupId = level === 'group' ? (req.params as { id: string }).id : null;
      if (groupId !== null && groupMembers(fhirStore, groupId) === null) throw new FhirError(404, 'not-found', `Group/${groupId} does not exist.`);
      const url = `${urls.issuer}${req.originalUrl}`;
      const request = parseKickOff({
        level,
        groupId,
        params: kickOffParameters(req),
        url,
        levelTypes: typesOf(level),
        allowedTypes: systemReadableTypes(res.locals.grant!.scope, typesOf(level)),
        servedTypes: fhirStore.supportedTypes,
      });
      const exportId = newId('exp');
      const transactionTime = new Date();
      // Recorded before its workflow starts, so the status URL answers from the first poll (and a DELETE finds it).
      await recordNewExport(
        db,
        {
          id: exportId,
          organizationId,
          clientId: res.locals.grant!.clientId,
          request,
          transactionTime,
          expiresAt: new Date(transactionTime.getTime() + ABANDONED_AFTER_MS),
        },
        (counts) => assertWithinBounds(counts, config),
      );
      try {
        await workflows.startOnce(exportWorkflow, {
          workflowId: exportWorkflowId(exportId),
          args: [{ exportId, organizationId, fileLifetimeHours: config.BULK_EXPORT_FILE_HOURS }],
          organizationId,
          searchAttributes: exportSearchAttributes(organizationId),
          summary: `${level} export of ${request.types.length} type(s)`,
        });
      } catch (error) {
        await deleteExport(db, exportId);
        throw error;
      }
      res.status(202).setHeader('Content-Location', statusUrl(exportId)).end();
    };

  // Bulk Data 2.0 allows the kick-off as a POST too (its parameters in a Parameters body, or the query).
  for (const method of ['get', 'post'] as const) {
    router[method](`${base}/$export`, jsonOnly, withToken, systemAccess, kickOff('system'));
    router[method](`${base}/Patient/$export`, jsonOnly, withToken, systemAccess, kickOff('patient'));
    router[method](`${base}/Group/:id/$export`, jsonOnly, withToken, systemAccess, kickOff('group'));
  }

  /**
   * The caller's export, or 404 for an unknown id and another client's alike (of the same organization
   * or another): an export belongs to the client that started it.
   */
  async function ownedExport(req: Request, res: Response): Promise<BulkExport> {
    const { exportId } = req.params as { exportId: string };
    const grant = res.locals.grant!;
    const row = isId('exp', exportId) ? await findExport(db, grant, exportId) : undefined;
    if (!row) throw new FhirError(404, 'not-found', `No bulk export ${exportId} exists (or it expired, or was deleted).`);
    return row;
  }

  router.get(`${base}${BULK_EXPORT_PATHS.status}`, jsonOnly, withToken, systemAccess, async (req, res) => {
    const row = await ownedExport(req, res);
    if (row.status === 'running') {
      res
        .status(202)
        .setHeader('X-Progress', `${row.typesWritten.length} of ${row.typesTotal} types written`)
        .setHeader('Retry-After', String(RETRY_AFTER_SECONDS))
        .end();
      return;
    }
    res.setHeader('Expires', row.expiresAt.toUTCString());
    if (row.status === 'failed') {
      res
        .status(500)
        .type('application/fhir+json')
        .send(JSON.stringify(operationOutcome('exception', row.error ?? 'The export failed.', 'fatal')));
      return;
    }
    const files = await exportFileList(db, row.id);
    const entry = (file: (typeof files)[number]) => ({ type: file.type, url: `${statusUrl(row.id)}/${file.name}`, count: file.count });
    res
      .status(200)
      .type('application/json')
      .send(
        JSON.stringify({
          transactionTime: row.transactionTime.toISOString(),
          request: (row.request as ExportRequest).url,
          requiresAccessToken: true,
          output: files.filter((file) => file.kind === 'output').map(entry),
          error: files.filter((file) => file.kind === 'error').map(entry),
        }),
      );
  });

  router.delete(`${base}${BULK_EXPORT_PATHS.status}`, jsonOnly, withToken, systemAccess, async (req, res) => {
    const row = await ownedExport(req, res);
    if (row.status === 'running') {
      // Cancelled first, so a Temporal that cannot be reached (503) leaves the export as it was.
      try {
        await workflows.cancel(exportWorkflowId(row.id));
      } catch (error) {
        if (!(error instanceof WorkflowClosedError)) throw error;
      }
    }
    // Its files go with it; a step still running finds it gone and writes nothing.
    await deleteExport(db, row.id);
    res.status(202).end();
  });

  router.get(`${base}${BULK_EXPORT_PATHS.file}`, ndjsonAccepted, withToken, systemAccess, async (req, res) => {
    const row = await ownedExport(req, res);
    const { file } = req.params as { file: string };
    const stored = FILE_NAME.test(file) ? await exportFile(db, row.id, file) : undefined;
    if (!stored) throw new FhirError(404, 'not-found', `This bulk export has no file ${file}.`);
    // The scopes of the token reading it, not only those that started the export: a narrower token reads less.
    const { scope } = res.locals.grant!;
    if (stored.kind === 'output' && systemReadableTypes(scope, [stored.type]).length === 0) {
      throw new FhirError(
        403,
        'forbidden',
        `${file} holds ${stored.type} resources, which this token's scopes (${scope}) do not allow reading; it needs system/${stored.type}.rs (or system/*.rs).`,
        { 'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${scope}"` },
      );
    }
    res.setHeader('Expires', row.expiresAt.toUTCString());
    res.status(200).type('application/fhir+ndjson').send(stored.content);
  });

  return router;
}

/**
 * The kick-off's parameters: the query's, and for a POST those of its FHIR Parameters body
 * (`valueString`, `valueInstant` or `valueCode` each), as Bulk Data 2.0 defines the POST kick-off.
 */
function kickOffParameters(req: Request): URLSearchParams {
  const params = new URL(req.originalUrl, 'http://fhir.invalid').searchParams;
  const body = req.method === 'POST' ? (req.body as { resourceType?: unknown; parameter?: unknown } | undefined) : undefined;
  if (body === undefined || body === null || (typeof body === 'object' && Object.keys(body).length === 0)) return params;
  if (body.resourceType !== 'Parameters' || (body.parameter !== undefined && !Array.isArray(body.parameter))) {
    throw new FhirError(400, 'invalid', 'A POST kick-off carries its parameters in a FHIR Parameters resource (or in the query string).');
  }
  for (const parameter of (body.parameter ?? []) as { name?: unknown; valueString?: unknown; valueInstant?: unknown; valueCode?: unknown }[]) {
    const value = parameter.valueString ?? parameter.valueInstant ?? parameter.valueCode;
    if (typeof parameter.name !== 'string' || typeof value !== 'string') {
      throw new FhirError(400, 'invalid', 'Each kick-off parameter needs a name and a valueString, valueInstant or valueCode.');
    }
    params.append(parameter.name, value);
  }
  return params;
}

/** What a file request may say it accepts: the NDJSON names (Bulk Data's default is application/fhir+ndjson), JSON, or anything. */
const FILE_MEDIA_TYPES = ['application/fhir+ndjson', 'application/ndjson', 'application/json', 'application/fhir+json'];

/** A file request whose Accept rules out every name of NDJSON is 406; no Accept, `*\/*` and the NDJSON and JSON types are served. */
const ndjsonAccepted: RequestHandler = (req, _res, next) => {
  if (req.headers.accept && !req.accepts(FILE_MEDIA_TYPES)) {
    throw new FhirError(
      406,
      'not-supported',
      `Accept: ${req.headers.accept} cannot be served; bulk export files are application/fhir+ndjson (Accept it, application/ndjson, application/json or */*).`,
    );
  }
  next();
};

/**
 * The types a token's scopes let it export: a `system/` scope with read permission (v1 `.read` or
 * `.*`, v2 `r`) on the type or `*`, unfiltered (an export cannot apply a scope's filter to a file).
 */
function systemReadableTypes(scope: string, types: readonly string[]): string[] {
  return types.filter((type) => {
    const allowed = permission(scope, 'system', type, 'read');
    return allowed.allowed && allowed.filters === 'all';
  });
}

/** At most so many exports running, and so many kept, per organization: each holds files in the database until it expires. */
function assertWithinBounds({ running, kept }: { running: number; kept: number }, config: Config): void {
  if (running >= config.BULK_EXPORTS_IN_FLIGHT_PER_ORGANIZATION) {
    throw new FhirError(
      429,
      'throttled',
      `Your organization already has ${running} bulk exports running, its bound; wait for one to end (or DELETE one), then try again.`,
      { 'Retry-After': '10' },
    );
  }
  if (kept >= config.BULK_EXPORTS_KEPT_PER_ORGANIZATION) {
    throw new FhirError(
      429,
      'throttled',
      `Your organization keeps ${kept} bulk exports, its bound; DELETE one you no longer need (or wait until one expires), then try again.`,
      { 'Retry-After': '60' },
    );
  }
}
