import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../test/support/ports';
import { startScript } from '../test/support/processes';

/**
 * `npm run bench:memory`: what `npm start` holds on the embedded default (no DATABASE_URL, no
 * TEMPORAL_ADDRESS: PGlite under the data directory, the Temporal dev server it starts itself, API,
 * worker and relay receiver in one process), read from the kernel: the resident set (RSS) and the
 * proportional set size (PSS) summed over its process tree (the service, the Temporal dev server, and
 * the children it forks while starting), sampled every 100 ms from /proc, with each process's share at
 * the peak. Three runs: the first
 * start, on a new data directory (PGlite creates its database), a restart on it, and a start holding
 * BENCH_BACKLOG deliveries (10,000; 0 skips it) waiting in backoff for a receiver that always fails.
 *
 * The tree starts at the process `npm start`'s script runs (package.json); npm's own process above
 * it is the package manager's, not the service's, and is left out.
 *
 * BENCH_IDLE_SETTLE_SECONDS (15): how long after the banner the service is left alone before the
 * idle figure, BENCH_IDLE_SECONDS (10): how long idle is sampled (its highest sample is the figure).
 */
const settleSeconds = Number(process.env.BENCH_IDLE_SETTLE_SECONDS ?? 15);
const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? 10);
const backlogSize = Number(process.env.BENCH_BACKLOG ?? 10_000);
/** Issue 32's goals for `npm start` on the embedded default. */
const GOALS = { startPeakMiB: 600, idleMiB: 400, backlogMiB: 500 };
const SAMPLE_EVERY_MS = 100;
const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

const formatLoad = () =>
  loadavg()
    .map((load) => load.toFixed(2))
    .join(', ');
const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
const mib = (value: number) => `${value.toFixed(0)} MiB`;

/**
 * The two counts the kernel keeps of a process's memory: its resident set (every page it maps, a page
 * shared with another process counted in full by each) and its proportional share (a page shared by n
 * processes counts 1/n, so summed over a tree each page counts once: the node binary's pages, say, which
 * the service and the child it forks both map). PSS also splits a page with processes outside the tree
 * (other node processes or dev servers on a shared machine), so there it reads lower than on a laptop
 * running npm start alone; RSS holds anywhere.
 */
const MEASURES = ['RSS', 'PSS'] as const;
type Measure = (typeof MEASURES)[number];
type Memory = Record<Measure, number>;

/** Both counts of one process in MiB, from /proc/<pid>/smaps_rollup; undefined once it is gone. */
function memoryOf(pid: number): Memory | undefined {
  try {
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const field = (name: string) => Number(rollup.match(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm'))?.[1] ?? 0) / 1024;
    return { RSS: field('Rss'), PSS: field('Pss') };
  } catch {
    return undefined;
  }
}

/** `root` and every process below it, from each process's parent in /proc/<pid>/stat. */
function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name is in parentheses and may hold spaces: the parent's pid is the second field after it.
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // Gone meanwhile.
    }
  }
  const tree = [root];
  for (let index = 0; index < tree.length; index += 1) tree.push(...(children.get(tree[index]!) ?? []));
  return tree;
}

/** What a process of the tree is, from its executable and arguments. */
function processLabel(pid: number): string {
  try {
    const executable = basename(readlinkSync(`/proc/${pid}/exe`));
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    if (executable.startsWith('temporal')) return 'Temporal dev server';
    if (argv.some((argument) => argument.endsWith('tsx/dist/cli.mjs'))) return 'tsx (runs the service as its child)';
    const script = argv.findLast((argument) => /\.m?[jt]s$/.test(argument));
    if (script) return `node ${basename(script)}`;
    return executable;
  } catch {
    return 'gone';
  }
}

/** The tree's memory by process label (one label may cover several processes). */
type Sample = Map<string, Memory>;

function sampleTree(root: number): Sample {
  const sample: Sample = new Map();
  for (const pid of processTree(root)) {
    const memory = memoryOf(pid);
    if (!memory || memory.RSS === 0) continue;
    const label = processLabel(pid);
    const sum = sample.get(label) ?? { RSS: 0, PSS: 0 };
    sample.set(label, { RSS: sum.RSS + memory.RSS, PSS: sum.PSS + memory.PSS });
  }
  return sample;
}

const total = (sample: Sample, measure: Measure) => [...sample.values()].reduce((sum, memory) => sum + memory[measure], 0);
const highest = (samples: Sample[], measure: Measure) =>
  samples.reduce((top, sample) => (total(sample, measure) > total(top, measure) ? sample : top), new Map());
const lowest = (samples: Sample[], measure: Measure) => Math.min(...samples.map((sample) => total(sample, measure)));
const breakdown = (sample: Sample, measure: Measure) =>
  [...sample.entries()]
    .sort(([, a], [, b]) => b[measure] - a[measure])
    .map(([label, memory]) => `${label} ${mib(memory[measure])}`)
    .join(', ');

/** One figure by both counts, each beside its goal, with each process's share at the highest sample. */
function report(figure: string, samples: Sample[], goalMiB: number, options: { lowest?: boolean } = {}): void {
  for (const measure of MEASURES) {
    const top = highest(samples, measure);
    const least = options.lowest ? ` (lowest ${mib(lowest(samples, measure))})` : '';
    console.log(`  ${figure}, ${measure} summed: ${mib(total(top, measure))}${least} | goal < ${goalMiB} MiB: ${met(total(top, measure) < goalMiB)}`);
    console.log(`    at the highest: ${breakdown(top, measure)}`);
  }
}

/** `npm start`'s script as a child of ours, its tree sampled until it is stopped. */
class RunningStart {
  readonly child: ChildProcess;
  readonly samples: Sample[] = [];
  private output = '';
  private readonly sampler: NodeJS.Timeout;

  constructor(env: Record<string, string>) {
    const { DATABASE_URL: _database, TEMPORAL_ADDRESS: _temporal, ...inherited } = process.env;
    const script = startScript();
    this.child = spawn(process.execPath, script.nodeArgs, {
      cwd: PROJECT_ROOT,
      env: { ...inherited, ...script.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    this.child.stdout!.on('data', (chunk: Buffer) => {
      this.output += chunk.toString('utf8');
    });
    this.sampler = setInterval(() => this.samples.push(sampleTree(this.child.pid!)), SAMPLE_EVERY_MS);
  }

  /** Resolves with what matched once the output shows `pattern`. */
  waitFor(pattern: RegExp): Promise<RegExpMatchArray> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const match = this.output.match(pattern);
        if (!match) return;
        this.child.stdout!.off('data', check);
        resolve(match);
      };
      this.child.stdout!.on('data', check);
      this.child.once('exit', (code) => reject(new Error(`npm start exited with ${code}:\n${this.output}`)));
      check();
    });
  }

  /** The samples taken since the last call. */
  takeSamples(): Sample[] {
    return this.samples.splice(0);
  }

  async stop(): Promise<void> {
    clearInterval(this.sampler);
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    await exited;
  }
}

async function startEnv(dataDir: string, extra: Record<string, string> = {}): Promise<Record<string, string>> {
  return {
    NODE_ENV: 'production',
    DATA_DIR: dataDir,
    TEMPORAL_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: String(await freePort()),
    HOST: '127.0.0.1',
    PORT: '0',
    RELAY_PORT: '0',
    HL7_MLLP_PORT: String(await freePort()),
    LOG_LEVEL: 'warn',
    ...extra,
  };
}

const pause = (seconds: number) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

/** Starts `npm start`, samples its tree until the banner (the peak) and then idle, and stops it. */
async function measureStart(run: string, dataDir: string): Promise<void> {
  const started = performance.now();
  const running = new RunningStart(await startEnv(dataDir));
  try {
    await running.waitFor(/Stop with Ctrl\+C\./);
    const startSeconds = (performance.now() - started) / 1000;
    const startSamples = running.takeSamples();
    await pause(settleSeconds);
    running.takeSamples();
    await pause(idleSeconds);
    const idleSamples = running.takeSamples();
    console.log(`${run}: ready in ${startSeconds.toFixed(1)} s`);
    report('peak while starting', startSamples, GOALS.startPeakMiB);
    report(`idle (${settleSeconds} s after ready, highest of ${idleSeconds} s)`, idleSamples, GOALS.idleMiB, { lowest: true });
  } finally {
    await running.stop();
  }
}

/** Runs `total` tasks with at most `concurrency` in flight. */
async function pool(count: number, concurrency: number, task: () => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) {
        next += 1;
        await task();
      }
    }),
  );
}

/** A receiver that always answers 503 and counts the requests it got. */
async function startFailingReceiver() {
  let received = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received += 1;
      res.writeHead(503).end();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`,
    received: () => received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * `backlogSize` deliveries to a receiver that always fails, each left waiting 30 min for its first
 * retry: the tree is sampled while they wait and the API answers a list of them and new triggers.
 */
async function measureBacklog(dataDir: string): Promise<void> {
  const failing = await startFailingReceiver();
  const running = new RunningStart(
    await startEnv(dataDir, { WEBHOOK_RETRY_SCHEDULE: '30m', RATE_LIMIT_PER_MINUTE: '10000000', ALLOW_PRIVATE_TARGETS: 'true' }),
  );
  try {
    await running.waitFor(/Stop with Ctrl\+C\./);
    const [, port] = await running.waitFor(/API\s+http:\/\/localhost:(\d+)/);
    const [, key] = await running.waitFor(/Demo API key\s+(sk_sandbox_\S+)/);
    const baseUrl = `http://127.0.0.1:${port}`;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const patched = await fetch(`${baseUrl}/v1/settings/webhook`, { method: 'PATCH', headers, body: JSON.stringify({ webhook_url: failing.url }) });
    if (!patched.ok) throw new Error(`PATCH /v1/settings/webhook answered ${patched.status}`);
    running.takeSamples();
    const started = performance.now();
    await pool(backlogSize, 20, async () => {
      const response = await fetch(`${baseUrl}/v1/webhooks/trigger-mock-event`, { method: 'POST', headers });
      if (response.status !== 202) throw new Error(`trigger answered ${response.status}`);
      await response.arrayBuffer();
    });
    while (failing.received() < backlogSize) await pause(0.2);
    const fillSeconds = (performance.now() - started) / 1000;
    const fillingSamples = running.takeSamples();
    // With the backlog waiting: a page of it listed, and a new delivery triggered, 100 times each.
    for (let i = 0; i < 100; i += 1) {
      await (await fetch(`${baseUrl}/v1/webhooks/deliveries?status=retrying&limit=50`, { headers })).arrayBuffer();
      await (await fetch(`${baseUrl}/v1/webhooks/trigger-mock-event`, { method: 'POST', headers })).arrayBuffer();
    }
    await pause(idleSeconds);
    const waitingSamples = running.takeSamples();
    console.log(`backlog: ${backlogSize} deliveries waiting in backoff (filled in ${fillSeconds.toFixed(0)} s, 20 triggers in flight)`);
    report(`with the backlog waiting (highest of ${waitingSamples.length} samples)`, waitingSamples, GOALS.backlogMiB, { lowest: true });
    report('while it filled', fillingSamples, GOALS.backlogMiB);
  } finally {
    await running.stop();
    await failing.close();
  }
}

async function main() {
  const scratch = mkdtempSync(join(tmpdir(), 'sandbox-bench-memory-'));
  try {
    console.log(
      `npm start on the embedded default (PGlite, its own Temporal dev server), the resident set of its process tree from /proc every ${SAMPLE_EVERY_MS} ms; ${cpus().length} CPU(s), Node ${process.version}.`,
    );
    console.log(`Load average before: ${formatLoad()}.\n`);
    const dataDir = join(scratch, 'data');
    await measureStart('first start (new data directory)', dataDir);
    await measureStart('restart (same data directory)', dataDir);
    if (backlogSize > 0) await measureBacklog(dataDir);
    console.log(`\nLoad average after: ${formatLoad()}.`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
