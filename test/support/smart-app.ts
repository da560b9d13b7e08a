import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import type { Bundle, Observation, Patient } from 'fhir/r4';

/**
 * The part of fhirclient's Node API this app uses. Its own type declarations are not imported: they
 * pull TypeScript's DOM library into the whole project, which retypes Node's global fetch.
 */
interface FhirClientStorage {
  get(key: string): Promise<unknown>;
  set(key: string, value: unknown): Promise<unknown>;
  unset(key: string): Promise<boolean>;
}
export interface FhirClient {
  patient: { id: string | null; read(): Promise<unknown>; request(url: string, options: { pageLimit: number; flat: boolean }): Promise<unknown> };
  state: { tokenResponse?: Record<string, unknown> };
  /** A request to the FHIR server, relative to its base, with the access token fhirclient holds. */
  request(request: { url: string; method: string; body: string; headers: Record<string, string> }): Promise<unknown>;
}
type SmartApi = (
  request: IncomingMessage,
  response: ServerResponse,
  storage: FhirClientStorage,
) => { authorize(options: Record<string, unknown>): Promise<never>; ready(): Promise<FhirClient> };
const smart = createRequire(import.meta.url)('fhirclient') as SmartApi;

/**
 * A SMART app as partners write them: the official `fhirclient` package in Node, unchanged, with
 * a launch page (`/launch`, authorize) and a redirect page (`/app`, ready, then FHIR reads). The
 * app answers what it read as JSON, so a test can see what the app saw.
 */
export interface SmartApp {
  origin: string;
  launchUri: string;
  redirectUri: string;
  /** The client registration the app runs with; it is registered after the app has an address. */
  configure(options: SmartAppOptions): void;
  stop(): Promise<void>;
}

export interface AppReport {
  patientId: string;
  patient: Patient;
  observations: Observation[];
  tokenResponse: Record<string, unknown>;
}

export interface SmartAppOptions {
  clientId: string;
  clientSecret?: string;
  scope: string;
  /** The FHIR base for a standalone launch; an EHR launch gets it from `iss`. */
  iss?: string;
  /**
   * What the app does once it has its token, answered as `result` beside the token response (a
   * provider's app calling operations, say); by default it reads the launch patient and their Observations.
   */
  work?: (client: FhirClient) => Promise<unknown>;
}

export async function startSmartApp(): Promise<SmartApp> {
  let options: SmartAppOptions | undefined;
  // One browser session: fhirclient keeps its state (PKCE verifier, tokens) here between pages.
  const session = new Map<string, unknown>();
  const storage = {
    get: async (key: string) => session.get(key),
    set: async (key: string, value: unknown) => {
      session.set(key, value);
      return value;
    },
    unset: async (key: string) => session.delete(key),
  };

  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://app.invalid').pathname;
    const fail = (error: unknown) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: (error as Error).message }));
    };
    if (!options) {
      fail(new Error('the app has not been configured with a client'));
      return;
    }
    if (path === '/launch') {
      smart(req, res, storage)
        .authorize({
          clientId: options.clientId,
          ...(options.clientSecret ? { clientSecret: options.clientSecret } : {}),
          scope: options.scope,
          redirectUri: '/app',
          pkceMode: 'required',
          ...(options.iss ? { iss: options.iss } : {}),
        })
        .catch(fail);
      return;
    }
    if (path === '/app') {
      smart(req, res, storage)
        .ready()
        .then(async (client) => {
          if (options?.work) {
            const result = await options.work(client);
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ result, tokenResponse: { ...client.state.tokenResponse } }));
            return;
          }
          const patient = (await client.patient.read()) as Patient;
          const bundle = (await client.patient.request('Observation?_count=3', { pageLimit: 0, flat: false })) as Bundle<Observation>[];
          const observations = bundle.flatMap((page) => (page.entry ?? []).map((entry) => entry.resource!));
          const report: AppReport = { patientId: client.patient.id!, patient, observations, tokenResponse: { ...client.state.tokenResponse } };
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(report));
        })
        .catch(fail);
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    launchUri: `${origin}/launch`,
    redirectUri: `${origin}/app`,
    configure: (chosen) => {
      options = chosen;
    },
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
