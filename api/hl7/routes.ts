import { and, eq } from 'drizzle-orm';
import type { Request } from 'express';
import { z } from 'zod';
import { hl7Identities } from '../../drizzle/schema';
import type { FhirStore } from '../../fixtures/store';
import { acceptHl7, findRecipientByIdentity, type Hl7Recipient } from '../../hl7/accept';
import { ackJson, addresseeFromText, buildAck, type Hl7Ack, synchronousAck } from '../../hl7/ack';
import { isBatchOrStream } from '../../hl7/batch';
import { generateMllpToken, hashMllpToken, mllpTokenHint } from '../../hl7/credentials';
import { hl7MessageCost } from '../../hl7/inject';
import type { PortableHl7Outcome } from '../../hl7/portable-outcome';
import { listTemplates, renderTemplate, UnknownPatientError } from '../../hl7/templates';
import { HL7_CONFORMANCE_MODES } from '../../hl7/vocabulary';
import type { Config } from '../../platform/config';
import { createCostBudget } from '../../platform/cost-budget';
import type { Database } from '../../platform/database';
import { idSchema } from '../../platform/ids';
import { refusesRealIdentifiers } from '../../platform/organizations';
import type { WorkflowGateway } from '../../platform/workflow-gateway';
import { attemptsOf, findDelivery, pendingDelivery } from '../../webhooks/delivery-records';
import type { NewDelivery } from '../../webhooks/new-delivery';
import { answerWork, planWork, startWork } from '../http/accepted-work';
import { rateLimited } from '../http/cost-limit';
import { ownedConnection } from '../http/owned-rows';
import { pageOfSorted, pageQuerySchema, pageSchema } from '../http/pagination';
import { ApiProblem } from '../http/problem';
import { defineRoute, RESPONDED } from '../http/route';
import { deliverySchema, presentDelivery } from '../webhooks/delivery-presenter';
import { startDelivery } from '../webhooks/start-delivery';
import { batchResultSchema, injectHl7Batch } from './batch';

/** The media types an ER7 (pipe-and-hat) body may come in; the first is the one the sandbox answers with. */
export const ER7_MEDIA_TYPES = ['x-application/hl7-v2+er7', 'application/hl7-v2', 'text/plain'] as const;
const ER7 = ER7_MEDIA_TYPES[0];

const templateSchema = z
  .object({
    id: z.string().meta({ example: 'adt-a01' }),
    message_type: z.string().meta({ example: 'ADT^A01^ADT_A01', description: 'MSH-9 as the template sends it' }),
    version: z.string().meta({ example: '2.5.1' }),
    description: z.string(),
    event: z.string().meta({ example: 'hl7.adt_a01.received', description: 'The catalog event the message is delivered under' }),
    patient_id: z.string().meta({ example: 'syn-pat-0001' }),
    er7: z.string().meta({ description: 'The message in ER7, segments separated by carriage returns' }),
  })
  .meta({ id: 'Hl7Template' });

const patientQuery = z
  .string()
  .regex(/^[A-Za-z0-9\-.]{1,64}$/, 'patient must be a synthetic patient id, e.g. syn-pat-0002')
  .optional()
  .meta({ description: 'Fill the template from this synthetic patient (default syn-pat-0001)' });

const ackErrorSchema = z
  .object({
    path: z.string().meta({ description: 'ERR-2, e.g. PID^1^7^1^1', example: 'PID^1^8^1^1' }),
    location: z.string(),
    segment: z.string().meta({ example: 'PID' }),
    sequence: z.number().int().optional(),
    field: z.number().int().optional(),
    repetition: z.number().int().optional(),
    component: z.number().int().optional(),
    code: z.number().int().meta({ description: 'HL7 table 0357', example: 103 }),
    code_text: z.string().meta({ example: 'Table value not found' }),
    severity: z.enum(['E', 'W']).meta({ description: 'ERR-4: E (error, in `errors`) or W (warning on an accepted message, in `warnings`)' }),
    message: z.string(),
  })
  .meta({ id: 'Hl7AckError' });

const ackSchema = z
  .object({
    code: z
      .enum(['AA', 'AE', 'AR', 'CA', 'CE', 'CR'])
      .meta({ description: 'MSA-1: AA/AE/AR for an application ACK, CA/CE/CR for the accept ACK of enhanced mode' }),
    message_control_id: z.string().meta({ description: 'MSA-2: the MSH-10 of the message acknowledged' }),
    ack_control_id: z.string().meta({ description: "The ACK's own MSH-10" }),
    er7: z.string().meta({ description: 'The ACK in ER7' }),
  })
  .meta({ id: 'Hl7Ack' });

const injectBodySchema = z
  .object({
    message: z
      .string()
      .min(1, 'message must hold the HL7 v2 message in ER7')
      .meta({ description: 'The HL7 v2 message in ER7 (segments separated by \\r, \\n or \\r\\n)' }),
    connection_id: idSchema('conn').optional().meta({
      description:
        "Deliver for this connection (its URL and secret when it has them); else the connection whose HL7 identity MSH-5/MSH-6 name, else the organization's default",
    }),
  })
  .strict()
  .meta({ id: 'Hl7Inject' });

const acknowledgementsSchema = z
  .object({
    mode: z.enum(['original', 'enhanced']).meta({ description: 'Original when MSH-15 and MSH-16 are both empty, else enhanced' }),
    accept_ack: ackSchema.nullable().meta({ description: 'The accept ACK (CA/CR) MSH-15 asks for; null when none is due' }),
    application_ack_due: z.boolean().meta({ description: 'Whether MSH-16 asks for the application ACK (`ack`) given the outcome' }),
  })
  .meta({ id: 'Hl7Acknowledgements' });

const injectResultSchema = z
  .object({
    ack: ackSchema,
    errors: z.array(ackErrorSchema),
    warnings: z
      .array(ackErrorSchema)
      .meta({ description: 'Findings that did not stop the message (ERR-4 = W): the field is left out of the FHIR Bundle' }),
    acknowledgements: acknowledgementsSchema,
    delivery: deliverySchema,
  })
  .meta({ id: 'Hl7InjectResult' });

const conformanceSchema = z.enum(HL7_CONFORMANCE_MODES).meta({
  description:
    'lenient (default): a missing or malformed field is a warning (AA, ERR-4 = W) and left out of the FHIR Bundle; strict: every finding is an error (AE), for testing conformance',
});

const identityBodySchema = z
  .object({
    receiving_application: z
      .string()
      .regex(/^[A-Za-z0-9 _.-]{1,180}$/, 'letters, digits, spaces, _ . - (up to 180)')
      .meta({ example: 'ACME-LAB' }),
    receiving_facility: z
      .string()
      .regex(/^[A-Za-z0-9 _.-]{1,180}$/, 'letters, digits, spaces, _ . - (up to 180)')
      .meta({ example: 'NORTH' }),
    rotate_token: z.boolean().optional().meta({ description: 'Issue a new MLLP token (answered in full, once); the old one stops working at once' }),
    conformance: conformanceSchema.optional().meta({ description: 'How messages for this connection are checked; lenient when left out' }),
  })
  .strict()
  .meta({ id: 'Hl7IdentityInput' });

const identitySchema = z
  .object({
    connection_id: z.string(),
    receiving_application: z.string().meta({ description: 'What senders put in MSH-5' }),
    receiving_facility: z.string().meta({ description: 'What senders put in MSH-6' }),
    conformance: conformanceSchema,
    mllp_port: z.number().int().nullable().meta({ description: 'The MLLP listener port (HL7_MLLP_PORT); null when it is off' }),
    mllp_token: z.string().nullable().meta({
      description:
        'What MLLP messages for this connection carry in MSH-8 (Security): in full only in the answer that issued it (the first PUT, or `rotate_token: true`), masked afterwards; null for an identity set before tokens existed (PUT with `rotate_token: true` issues one)',
      example: 'sbx_mllp_…x9Qa',
    }),
  })
  .meta({ id: 'Hl7Identity' });

const connectionParams = z.object({ connection_id: idSchema('conn') });

/** The connection a request names, and where (the body wins over the query string). */
interface NamedConnection {
  id: string;
  field: string;
}

function namedConnection(inBody: string | undefined, inQuery: string | undefined): NamedConnection | undefined {
  if (inBody) return { id: inBody, field: 'body.connection_id' };
  if (inQuery) return { id: inQuery, field: 'query.connection_id' };
  return undefined;
}

interface Hl7RouteDependencies {
  db: Database;
  config: Config;
  workflows: WorkflowGateway;
  fhirStore: FhirStore;
}

/** ER7 in, ER7 out, unless `Accept` prefers JSON; JSON in, JSON out, unless `Accept` prefers ER7. */
function answersInEr7(req: Request, sentEr7: boolean): boolean {
  const accept = req.headers.accept?.trim();
  if (!accept || accept === '*/*') return sentEr7;
  const offered = sentEr7 ? [...ER7_MEDIA_TYPES, 'application/json'] : ['application/json', ...ER7_MEDIA_TYPES];
  const preferred = req.accepts(offered);
  return preferred !== false && preferred !== 'application/json';
}

/** A problem that carries the HL7 ACK: `ack`, one error per ERR of severity E (its location as `path`), and the warnings. */
function ackProblem(status: number, code: string, detail: string, hl7Ack: Hl7Ack, members: Record<string, unknown> = {}): ApiProblem {
  const { ack, errors, warnings } = ackJson(hl7Ack);
  return new ApiProblem(status, code, detail, {
    errors: errors.map((error) => ({ path: error.location, ...error })),
    members: { ack, warnings: warnings.map((warning) => ({ path: warning.location, ...warning })), ...members },
  });
}

/** HL7 v2: templates from the synthetic world, the inject, and the HL7 identities MLLP routes by. */
export function hl7Routes({ db, config, workflows, fhirStore }: Hl7RouteDependencies) {
  // Per organization, beside the per-key request limit: a message costs by its size and count, not one request.
  const budget = createCostBudget(config.HL7_RATE_LIMIT_PER_MINUTE);
  const render = (id: string, patient: string | undefined) => {
    try {
      return renderTemplate(id, patient, fhirStore);
    } catch (error) {
      if (error instanceof UnknownPatientError)
        throw new ApiProblem(404, 'not_found', `No synthetic patient with id ${patient} exists; GET /v1/patients lists them.`);
      throw error;
    }
  };

  async function recipientFor(
    organizationId: string,
    connection: NamedConnection | undefined,
    application: string,
    facility: string,
  ): Promise<Hl7Recipient> {
    if (connection) {
      const owned = await ownedConnection(db, organizationId, connection.id, connection.field);
      const identity = await identityOf(organizationId, owned.id);
      return { organizationId, connectionId: owned.id, environment: owned.environment, conformance: identity?.conformance ?? 'lenient' };
    }
    const named = await findRecipientByIdentity(db, organizationId, application, facility);
    if (named) return named;
    return { organizationId, connectionId: null, environment: 'sandbox', conformance: 'lenient' };
  }

  async function identityOf(organizationId: string, connectionId: string) {
    const [identity] = await db
      .select()
      .from(hl7Identities)
      .where(and(eq(hl7Identities.organizationId, organizationId), eq(hl7Identities.connectionId, connectionId)));
    return identity;
  }
  const presentIdentity = (identity: typeof hl7Identities.$inferSelect, issuedToken?: string) => ({
    connection_id: identity.connectionId,
    receiving_application: identity.receivingApplication,
    receiving_facility: identity.receivingFacility,
    conformance: identity.conformance,
    mllp_port: config.HL7_MLLP_PORT,
    mllp_token: issuedToken ?? identity.mllpTokenHint,
  });

  return [
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/hl7/templates',
      operationId: 'listHl7Templates',
      summary: 'List HL7 v2 message templates, filled from a synthetic patient',
      description: 'One template per message type the inject takes, each an ER7 message ready to send, with the catalog event it becomes.',
      tag: 'HL7 v2',
      auth: 'api_key',
      query: pageQuerySchema.extend({ patient: patientQuery }).strict(),
      success: { status: 200, description: 'A page of templates, by id', schema: pageSchema(templateSchema) },
      errors: [400, 404, 422],
      handler: async ({ query }) => {
        const templates = listTemplates(query.patient, fhirStore).sort((a, b) => (a.id < b.id ? -1 : 1));
        return pageOfSorted(templates, query);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/hl7/templates/{template_id}',
      operationId: 'getHl7Template',
      summary: 'Read one HL7 v2 template, filled from a synthetic patient',
      tag: 'HL7 v2',
      auth: 'api_key',
      params: z.object({ template_id: z.string().meta({ example: 'oru-r01' }) }),
      query: z.object({ patient: patientQuery }).strict(),
      success: { status: 200, description: 'The template', schema: templateSchema },
      alsoResponds: [ER7],
      errors: [404, 422],
      handler: async ({ params, query, req, res }) => {
        const template = render(params.template_id, query.patient);
        if (!template)
          throw new ApiProblem(404, 'not_found', `No HL7 template with id ${params.template_id}; GET /v1/sandbox/hl7/templates lists them.`);
        if (answersInEr7(req, false)) {
          res.status(200).type(ER7).send(template.er7);
          return RESPONDED;
        }
        return template;
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sandbox/hl7/inject',
      operationId: 'injectHl7Message',
      summary: 'Send an HL7 v2 message: validated, acknowledged, mapped to FHIR R4 and delivered as a webhook',
      description:
        'Parses the message (encoding characters from MSH-1/MSH-2, escapes, repetitions, \\r/\\n/\\r\\n segment ends, any message type and trigger of v2.1 to 2.8, up to 256 KiB), checks it and answers ' +
        'with an HL7 ACK: AA (202) with the delivery that carries its FHIR R4 message Bundle under the catalog event of its trigger (`hl7.message.received` for triggers without a template), ' +
        'and one warning per finding that did not stop it (ERR-4 = W, the field left out of the Bundle); AE (content that stops processing, or any finding with `?conformance=strict` or a strict HL7 identity) ' +
        'or AR (unsupported version or processing id, or a failure on our side): 422, a problem body with the ACK and one error per problem, each with its ERR-2 location and table 0357 code. ' +
        'MSH-15/MSH-16 (enhanced mode) are honoured: `acknowledgements` says which ACKs are due, and an ER7 answer carries the accept ACK when no application ACK is due. ' +
        'The ACK comes as ER7 when the message was sent as ER7 (or `Accept` asks for it), else as JSON. Not HL7 at all: 400. Over 256 KiB: 413. ' +
        'A batch (FHS/BHS … BTS/FTS) or several messages in one body: each message is processed and acknowledged on its own (as its MSH-15/MSH-16 ask) and becomes its own delivery; ' +
        'the answer is the batch acknowledgement (BHS … BTS around the ACKs of each message), ER7 or JSON `{ batch_ack, messages }`: 202 when any message was accepted, else 422.',
      tag: 'HL7 v2',
      auth: 'api_key',
      query: z.object({
        connection_id: idSchema('conn').optional().meta({ description: 'For raw ER7 bodies: deliver for this connection' }),
        conformance: conformanceSchema
          .optional()
          .meta({ description: "How strictly to check this message; else the connection's HL7 identity decides (lenient by default)" }),
      }),
      body: injectBodySchema,
      textBody: {
        contentTypes: ER7_MEDIA_TYPES,
        field: 'message',
        description:
          'JSON `{ message, connection_id? }`, or the message itself in ER7 (`x-application/hl7-v2+er7`, `application/hl7-v2` or `text/plain`)',
      },
      success: {
        status: 202,
        description: 'AA: accepted, mapped, and its delivery workflow started (a batch: at least one of its messages was)',
        schema: z.union([injectResultSchema, batchResultSchema]),
      },
      alsoResponds: [ER7],
      errors: [400, 404, 413, 415, 422, 429, 503],
      handler: async ({ auth, query, body, req, res }) => {
        const spent = budget.spend(auth.organizationId, hl7MessageCost(body.message));
        if (!spent.allowed) {
          throw rateLimited(
            `This organization used its HL7 budget (${config.HL7_RATE_LIMIT_PER_MINUTE} units a minute; a message costs 1, and 1 more per 16 KiB). Wait ${spent.retryAfterSeconds} s (Retry-After), then send it again.`,
            spent.retryAfterSeconds,
          );
        }
        const sentEr7 = typeof req.body === 'string';
        const inEr7 = answersInEr7(req, sentEr7);
        const connection = namedConnection(body.connection_id, query.connection_id);
        // A real identifier is masked with a warning, or refuses the message when the organization says so (hl7/privacy.ts).
        const privacy = (await refusesRealIdentifiers(db, auth.organizationId)) ? 'refuse' : 'mask';
        if (isBatchOrStream(body.message)) {
          const { accepted, result } = await injectHl7Batch(
            {
              db,
              startDelivery: (delivery) => startDelivery({ workflows, db }, delivery, config.WEBHOOK_RETRY_SCHEDULE),
              onError: (error) => req.log?.error({ err: error }, 'An HL7 batch message could not be queued'),
            },
            body.message,
            (application, facility) => recipientFor(auth.organizationId, connection, application, facility),
            query.conformance,
            privacy,
          );
          // 202 once any message of the batch was accepted; each message's own answer is in the batch acknowledgement.
          const status = accepted > 0 ? 202 : 422;
          if (inEr7) res.status(status).type(ER7).send(result.batch_ack);
          else res.status(status).json(result);
          return RESPONDED;
        }
        /** The ACK the answer carries, and the acknowledgements MSH-15/MSH-16 asked for. */
        const acknowledge = (acknowledged: Extract<PortableHl7Outcome, { kind: 'acknowledged' }>) => {
          const to = acknowledged.header?.addressee ?? addresseeFromText(body.message);
          const acceptAck = acknowledged.due.accept ? buildAck(acknowledged.due.accept, to, []) : null;
          return {
            er7: synchronousAck(acknowledged.ack, acknowledged.due, to).er7,
            acknowledgements: {
              mode: acknowledged.due.mode,
              accept_ack: acceptAck && ackJson(acceptAck).ack,
              application_ack_due: acknowledged.due.application,
            },
          };
        };
        const refuse = (refused: Extract<PortableHl7Outcome, { kind: 'acknowledged' }>): typeof RESPONDED => {
          const { er7, acknowledgements } = acknowledge(refused);
          if (inEr7) {
            res.status(422).type(ER7).send(er7);
            return RESPONDED;
          }
          const { code } = refused.ack;
          const summary = refused.ack.errors
            .filter((error) => error.severity === 'E')
            .map((error) => `${error.location} ${error.message}`)
            .join('; ');
          const detail = `The message was ${code === 'AR' ? 'rejected (AR)' : 'not accepted (AE)'}: ${summary}`;
          throw ackProblem(422, code === 'AR' ? 'hl7_rejected' : 'hl7_invalid', detail, refused.ack, { acknowledgements });
        };
        const describe = (delivery: NewDelivery) => `delivery ${delivery.id}`;
        const acceptance = await acceptHl7(
          {
            db,
            startDelivery: (delivery) =>
              startWork(res, delivery, { describe, start: () => startDelivery({ workflows, db }, delivery, config.WEBHOOK_RETRY_SCHEDULE) }),
            onError: (error) => req.log?.warn({ err: error }, 'An HL7 delivery was started but its row not recorded here; the workflow records it'),
          },
          {
            text: body.message,
            conformance: query.conformance,
            privacy,
            recipientFor: (application, facility) => recipientFor(auth.organizationId, connection, application, facility),
            reservePlan: (plan) => planWork(res, plan),
          },
        );
        if (acceptance.kind === 'refused') {
          const { outcome } = acceptance;
          if (outcome.kind === 'too_large') throw ackProblem(413, 'hl7_message_too_large', outcome.detail, outcome.ack);
          if (outcome.kind === 'not_hl7') throw ackProblem(400, 'not_hl7', outcome.detail, outcome.ack);
          return refuse(outcome);
        }
        const { outcome: accepted, delivery } = acceptance;
        const answer = await answerWork(res, delivery, {
          describe,
          answer: async () => {
            const recorded = await findDelivery(db, auth.organizationId, delivery.id, delivery.envelopeBody);
            return presentDelivery(recorded ?? pendingDelivery(delivery), (await attemptsOf(db, [delivery.id])).get(delivery.id)!);
          },
          fallback: () => presentDelivery(pendingDelivery(delivery), []),
        });
        const url = `/v1/webhooks/deliveries/${answer.id}`;
        res.setHeader('Location', url);
        const { er7, acknowledgements } = acknowledge(accepted);
        if (inEr7) {
          res.status(202).type(ER7).send(er7);
          return RESPONDED;
        }
        const { ack, warnings } = ackJson(accepted.ack);
        return {
          ack,
          errors: [],
          warnings: warnings.map((warning) => ({ path: warning.location, ...warning })),
          acknowledgements,
          delivery: answer,
        };
      },
    }),
    defineRoute({
      method: 'put',
      path: '/v1/sandbox/hl7/identities/{connection_id}',
      operationId: 'setHl7Identity',
      summary: "Set a connection's HL7 identity: the MSH-5/MSH-6 that route MLLP messages to it",
      description:
        "MLLP carries no API key: a message sent to the MLLP listener carries the connection's MLLP token in MSH-8 (Security), issued here (in full once: on the first PUT or with `rotate_token: true`), " +
        'and names the identity in MSH-5 (receiving application) and MSH-6 (receiving facility); without a valid token it is answered AR (CR in enhanced mode). ' +
        'An identity is unique within the organization (409 when another of its connections has it).',
      tag: 'HL7 v2',
      auth: 'api_key',
      params: connectionParams,
      body: identityBodySchema,
      success: { status: 200, description: 'The identity', schema: identitySchema },
      errors: [404, 409, 415, 422],
      handler: async ({ auth, params, body }) => {
        await ownedConnection(db, auth.organizationId, params.connection_id, 'path.connection_id');
        const taken = await findRecipientByIdentity(db, auth.organizationId, body.receiving_application, body.receiving_facility);
        if (taken && taken.connectionId !== params.connection_id) {
          throw new ApiProblem(
            409,
            'hl7_identity_taken',
            `Another connection of your organization already has the HL7 identity ${body.receiving_application}/${body.receiving_facility}; choose another.`,
          );
        }
        const existing = await identityOf(auth.organizationId, params.connection_id);
        const token = !existing || body.rotate_token ? generateMllpToken() : undefined;
        const values = {
          receivingApplication: body.receiving_application,
          receivingFacility: body.receiving_facility,
          conformance: body.conformance ?? 'lenient',
          updatedAt: new Date(),
          ...(token ? { mllpTokenHash: hashMllpToken(token), mllpTokenHint: mllpTokenHint(token) } : {}),
        };
        await db
          .insert(hl7Identities)
          .values({ connectionId: params.connection_id, organizationId: auth.organizationId, ...values })
          .onConflictDoUpdate({ target: hl7Identities.connectionId, set: values });
        return presentIdentity((await identityOf(auth.organizationId, params.connection_id))!, token);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sandbox/hl7/identities/{connection_id}',
      operationId: 'getHl7Identity',
      summary: "Read a connection's HL7 identity",
      tag: 'HL7 v2',
      auth: 'api_key',
      params: connectionParams,
      success: { status: 200, description: 'The identity', schema: identitySchema },
      errors: [404],
      handler: async ({ auth, params }) => {
        const identity = await identityOf(auth.organizationId, params.connection_id);
        if (!identity)
          throw new ApiProblem(404, 'not_found', `Connection ${params.connection_id} has no HL7 identity (or does not exist in your organization).`);
        return presentIdentity(identity);
      },
    }),
  ];
}
