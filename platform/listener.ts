import postgres from 'postgres';

/**
 * One subscriber of a channel: `onNotify` per NOTIFY, `onListen` each time LISTEN is (re)established,
 * `onDrop` as soon as the connection is known to be lost (notifications sent from then on are missed).
 */
export interface ListenSubscriber {
  onNotify(payload: string): void;
  onListen(): void;
  onDrop?(): void;
}

export interface WatchedListener {
  subscribe(channel: string, subscriber: ListenSubscriber): void;
  close(): Promise<void>;
}

export interface WatchedListenerOptions {
  /** How often the LISTEN connection is asked to answer; one that does not within the same time is dropped and replaced. */
  heartbeatMs: number;
  /** The pause between two attempts to listen again while the database cannot be reached. */
  retryMs: number;
}

/**
 * LISTEN on a connection of its own, watched: a close is seen at once (postgres.js's `onclose`), a
 * connection that silently stopped answering by a heartbeat, and either way subscribers hear
 * `onDrop` and listening is re-established, retried for as long as it takes. postgres.js's own
 * `listen` tries once after a drop and gives up silently when the database is still down, which
 * left caches believing they still heard every revocation.
 */
export function createWatchedListener(
  databaseUrl: string,
  clientOptions: postgres.Options<Record<string, never>>,
  options: WatchedListenerOptions,
): WatchedListener {
  const channels = new Map<string, ListenSubscriber[]>();
  let client: postgres.Sql | null = null;
  let up = false;
  let closed = false;
  let connecting: Promise<void> | null = null;

  const quoted = (channel: string) => `"${channel.replaceAll('"', '""')}"`;

  function open(): postgres.Sql {
    const candidate: postgres.Sql = postgres(databaseUrl, {
      ...clientOptions,
      max: 1,
      idle_timeout: 0,
      max_lifetime: null,
      onclose: () => {
        if (client === candidate) dropped();
      },
      // postgres.js passes every NotificationResponse here (its own listen uses the same option).
      onnotify: (channel: string, payload: string) => {
        if (client === candidate) for (const subscriber of channels.get(channel) ?? []) subscriber.onNotify(payload);
      },
    } as postgres.Options<Record<string, never>>);
    return candidate;
  }

  function dropped(): void {
    const wasUp = up;
    up = false;
    const lost = client;
    client = null;
    if (lost) void lost.end({ timeout: 0 }).catch(() => {});
    if (wasUp) for (const subscriber of [...channels.values()].flat()) subscriber.onDrop?.();
    connect();
  }

  /** Listens on every channel on a fresh connection, retrying until it works or the listener is closed. */
  function connect(): void {
    if (connecting || closed) return;
    connecting = (async () => {
      while (!closed && !up) {
        const candidate = open();
        client = candidate;
        try {
          for (const channel of channels.keys()) await candidate.unsafe(`listen ${quoted(channel)}`);
          if (client !== candidate) continue;
          up = true;
          for (const subscriber of [...channels.values()].flat()) subscriber.onListen();
        } catch {
          if (client === candidate) client = null;
          await candidate.end({ timeout: 0 }).catch(() => {});
          if (!closed) await new Promise((resolve) => setTimeout(resolve, options.retryMs).unref());
        }
      }
    })().finally(() => {
      connecting = null;
    });
  }

  const heartbeat = setInterval(() => {
    const current = client;
    if (!up || !current) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the LISTEN connection did not answer')), options.heartbeatMs);
    });
    Promise.race([current`select 1`, late])
      .catch(() => {
        if (client === current) dropped();
      })
      .finally(() => clearTimeout(timer));
  }, options.heartbeatMs);
  heartbeat.unref();

  return {
    subscribe(channel, subscriber) {
      const known = channels.get(channel);
      if (known) known.push(subscriber);
      else channels.set(channel, [subscriber]);
      if (!up) {
        connect();
        return;
      }
      const current = client!;
      if (known) {
        subscriber.onListen();
        return;
      }
      current.unsafe(`listen ${quoted(channel)}`).then(
        () => subscriber.onListen(),
        () => {
          if (client === current) dropped();
        },
      );
    },
    async close() {
      closed = true;
      clearInterval(heartbeat);
      const current = client;
      client = null;
      up = false;
      await current?.end({ timeout: 5 });
    },
  };
}
