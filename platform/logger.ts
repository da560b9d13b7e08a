import pino, { type Logger } from 'pino';

/** JSON logs for machines; readable lines when a person is watching a terminal in development. */
export function createLogger(level: string, options: { pretty?: boolean } = {}): Logger {
  const pretty = options.pretty ?? (process.stdout.isTTY && process.env.NODE_ENV !== 'production');
  return pino({
    level,
    redact: ['req.headers.authorization', 'req.headers.cookie'],
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname' } } } : {}),
  });
}
