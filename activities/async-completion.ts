import { CompleteAsyncError, Context } from '@temporalio/activity';
import { ActivityCancelledError, ActivityNotFoundError, ActivityResetError, type AsyncCompletionClient } from '@temporalio/client';

/**
 * Activities that finish outside the worker's activity slot (Temporal's async completion). The
 * activity hands its work here and returns at once, which gives its slot back to the worker; the
 * work runs in this process when it can and completes (or fails) the activity by its task token.
 * Meanwhile it heartbeats through the client, so a worker that dies is noticed by the activity's
 * heartbeat timeout and Temporal retries it on another worker, as for an activity in a slot.
 */
export interface AsyncCompletions {
  /**
   * From inside an activity: runs `work` once the activity has returned, and throws the
   * CompleteAsyncError the activity must let through. `signal` aborts when Temporal no longer waits
   * for this attempt (timed out, cancelled, reset) or the worker stops; work that has not begun then
   * never does, and the activity is left to Temporal (retried at its heartbeat timeout).
   */
  completeLater(work: (signal: AbortSignal) => Promise<unknown>): never;
  /** At worker stop: aborts what waits, lets what runs finish and complete. */
  close(): Promise<void>;
}

export function createAsyncCompletions(client: AsyncCompletionClient): AsyncCompletions {
  const open = new Map<Promise<void>, AbortController>();

  async function completeOutside(taskToken: Uint8Array, heartbeatEveryMs: number | null, work: (signal: AbortSignal) => Promise<unknown>) {
    const stop = new AbortController();
    const gone = (error: unknown) =>
      error instanceof ActivityNotFoundError || error instanceof ActivityCancelledError || error instanceof ActivityResetError;
    const beat =
      heartbeatEveryMs === null
        ? undefined
        : setInterval(() => {
            client.heartbeat(taskToken).catch((error: unknown) => {
              if (gone(error)) stop.abort(error);
            });
          }, heartbeatEveryMs);
    const done = (async () => {
      let result: unknown;
      try {
        result = await work(stop.signal);
      } catch (error) {
        if (stop.signal.aborted) return;
        await client.fail(taskToken, error).catch(() => {});
        return;
      } finally {
        clearInterval(beat);
      }
      // Temporal may have given up on this attempt meanwhile: its retry answers from the attempt's record.
      await client.complete(taskToken, result).catch(() => {});
    })();
    open.set(done, stop);
    await done;
    open.delete(done);
  }

  return {
    completeLater(work) {
      const { taskToken, heartbeatTimeoutMs } = Context.current().info;
      // Twice per heartbeat timeout, so one late beat on a loaded machine does not time the attempt out.
      void completeOutside(taskToken, heartbeatTimeoutMs ? Math.max(heartbeatTimeoutMs / 2, 200) : null, work);
      throw new CompleteAsyncError();
    },
    async close() {
      for (const stop of open.values()) stop.abort(new Error('The worker is stopping.'));
      await Promise.all(open.keys());
    },
  };
}
