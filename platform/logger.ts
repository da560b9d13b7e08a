import pino, { type DestinationStream, type Logger } from 'pino';

/**
 * JSON logs for machines; readable lines when a person is watching a terminal in development.
 * Whatever is logged goes through the serializers below, so no secret, token, code, launch handle
 * or SQL parameter reaches a log (BRIEF, Security). `destination` is for tests that read the logs.
 */
export function createLogger(level: string, options: { pretty?: boolean; destination?: DestinationStream } = {}): Logger {
  const pretty = options.pretty ?? (process.stdout.isTTY && process.env.NODE_ENV !== 'production' && !options.destination);
  const settings: pino.LoggerOptions = {
    level,
    redact: ['req.headers.authorization', 'req.headers.cookie'],
    serializers: { err: serializeError, error: serializeError },
    hooks: {
      // Messages are often built from values (`${step.name} failed: ${error.message}`): scrubbed too.
      logMethod(args, log) {
        log.apply(this, args.map((arg) => (typeof arg === 'string' ? scrubText(arg) : arg)) as Parameters<typeof log>);
      },
    },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname' } } } : {}),
  };
  return options.destination ? pino(settings, options.destination) : pino(settings);
}

/** The shapes of every credential this service issues: signing secrets, client secrets, API keys, JWTs. */
const CREDENTIAL = /\b(?:sbx_whsec_|sbx_cs_|sk_sandbox_)[A-Za-z0-9_-]+|\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g;
// Linear: a character class repeated, with nothing after it that could make it give characters back.

/** drizzle's DrizzleQueryError puts the bound values in its message (and so its stack): `…\nparams: a,b,c`. */
const PARAMS_LINE = /\nparams: [^\n]*/g;

/** Credential-shaped substrings and drizzle's parameter lines, replaced. */
export function scrubText(text: string): string {
  return text.replace(PARAMS_LINE, '\nparams: [redacted]').replace(CREDENTIAL, '[redacted]');
}

/** Fields of database errors that hold the statement's bound values (drizzle's `params`, postgres.js's `parameters` and `args`). */
const PARAMETER_FIELDS = new Set(['params', 'parameters', 'args']);

/**
 * pino's error serializer, then the values a database error carries dropped (its bound parameters,
 * which are the row being written: a webhook secret, a token digest) and every string scrubbed,
 * through the whole `cause` chain.
 */
export function serializeError(error: unknown): unknown {
  if (!(error instanceof Error)) return scrubValue(error, 0);
  return scrubValue(pino.stdSerializers.errWithCause(error), 0);
}

function scrubValue(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return scrubText(value);
  if (value === null || typeof value !== 'object' || depth > 8) return value;
  if (Array.isArray(value)) return value.map((item) => scrubValue(item, depth + 1));
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => !PARAMETER_FIELDS.has(key))
      .map(([key, item]) => [key, scrubValue(item, depth + 1)]),
  );
}

/** Query parameters whose values are credentials or handles on one: codes, tokens, launch handles, picker request ids. */
const SENSITIVE_QUERY_PARAMETERS = new Set([
  'code',
  'code_verifier',
  'launch',
  'request',
  'state',
  'nonce',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'client_secret',
  'secret',
  'key',
  'api_key',
]);

/** A request URL as logged: the path, and the query with the values of sensitive parameters replaced. */
export function redactUrl(url: string): string {
  const question = url.indexOf('?');
  if (question < 0) return scrubText(url);
  const params = new URLSearchParams(url.slice(question + 1));
  const redacted = new URLSearchParams();
  for (const [name, value] of params) redacted.append(name, SENSITIVE_QUERY_PARAMETERS.has(name.toLowerCase()) ? 'redacted' : value);
  return scrubText(`${url.slice(0, question)}?${redacted.toString()}`);
}
