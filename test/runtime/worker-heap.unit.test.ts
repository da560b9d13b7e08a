import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/**
 * The same churn of short-lived objects (30 batches kept at a time, the rest garbage) in a fresh Node
 * process, with the bound a worker process sets or without it; prints the largest heap V8 reserved.
 */
const CHURN = `
  import { getHeapStatistics } from 'node:v8';
  import { boundHeapGrowth } from './runtime/worker.ts';
  boundHeapGrowth(Number(process.env.PERCENT));
  const kept = [];
  let largest = 0;
  for (let round = 0; round < 300; round += 1) {
    const batch = [];
    for (let i = 0; i < 20000; i += 1) batch.push({ name: 'synthetic-' + i, pair: [i, i + 1] });
    kept.push(batch);
    if (kept.length > 30) kept.shift();
    largest = Math.max(largest, getHeapStatistics().total_heap_size);
  }
  process.stdout.write(String(largest / 2 ** 20));
`;

function largestHeapMiB(percent: number): number {
  const result = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHURN], {
    env: { ...process.env, PERCENT: String(percent) },
    encoding: 'utf8',
  });
  expect(result.status, result.stderr).toBe(0);
  return Number(result.stdout);
}

describe('a worker process bounds its heap growth', () => {
  it('reserves far less heap for the same garbage than V8 left to itself', () => {
    const unbounded = largestHeapMiB(0);
    const bounded = largestHeapMiB(100);
    expect(bounded).toBeLessThan(unbounded * 0.8);
  });
});
