import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../platform/config';
import { createLogger } from '../platform/logger';
import { startDevServer } from '../runtime/temporal';
import { ensureTemporalCli, temporalCliOptions } from '../runtime/temporal-cli';
import { freePort } from '../test/support/ports';

/**
 * `npm run bench:memory`: what `npm start` holds on the embedded default (PGlite, no DATABASE_URL),
 * read from the kernel: the resident set of its process tree (the service and, while it starts, the
 * child that bundles the workflows), sampled every 100 ms from /proc. Twice: the first start, on a
 * new data directory (PGlite creates its database), and a restart on it. The Temporal dev server is
 * started by the benchmark (TEMPORAL_ADDRESS) and not counted: it is Temporal's, and its own figure
 * is printed beside.
 *
 * BENCH_IDLE_SETTLE_SECONDS (15): how long after the banner the service is left alone before the
 * idle figure, BENCH_IDLE_SECONDS (10): how long idle is sampled (its highest sample is the figure).
 */
const settleSeconds = Number(process.env.BENCH_IDLE_SETTLE_SECONDS ?? 15);
const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? 10);
/** Issue 32's goals for `npm start` on PGlite. */
const GOALS = { startPeakMiB: 600, idleMiB: 400 };
const SAMPLE_EVERY_MS = 100;

const formatLoad = () =>
  loadavg()
    .map((load) => load.toFixed(2))
    .join(', ');
const met = (ok: boolean) => (ok ? 'met' : 'NOT met');

/** Resident set of one process in MiB; 0 once it is gone. */
function residentMiB(pid: number): number {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
    return Number(line?.[1] ?? 0) / 1024;
  } catch {
    return 0;
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

const treeMiB = (root: number) => processTree(root).reduce((sum, pid) => sum + residentMiB(pid), 0);

interface StartMeasure {
  startSeconds: number;
  peakMiB: number;
  idleMiB: number;
  idleLowMiB: number;
}

/** Starts `npm start`'s entry point, samples its tree until the banner (the peak) and then idle, and stops it. */
async function measureStart(dataDir: string, temporalAddress: string): Promise<StartMeasure> {
  const { DATABASE_URL: _external, ...inherited } = process.env;
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('../bin/start.ts', import.meta.url))], {
    env: {
      ...inherited,
      NODE_ENV: 'production',
      DATA_DIR: dataDir,
      TEMPORAL_ADDRESS: temporalAddress,
      HOST: '127.0.0.1',
      PORT: '0',
      RELAY_PORT: '0',
      HL7_MLLP_PORT: String(await freePort()),
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const started = performance.now();
  const samples: number[] = [];
  const sampler = setInterval(() => samples.push(treeMiB(child.pid!)), SAMPLE_EVERY_MS);
  try {
    let output = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString('utf8');
        if (output.includes('Stop with Ctrl+C.')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`npm start exited with ${code}:\n${output}`)));
    });
    const startSeconds = (performance.now() - started) / 1000;
    samples.push(treeMiB(child.pid!));
    const peakMiB = Math.max(...samples);
    await new Promise((resolve) => setTimeout(resolve, settleSeconds * 1000));
    samples.length = 0;
    await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
    return { startSeconds, peakMiB, idleMiB: Math.max(...samples), idleLowMiB: Math.min(...samples) };
  } finally {
    clearInterval(sampler);
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  }
}

async function main() {
  const logger = createLogger('warn', { pretty: false });
  const scratch = mkdtempSync(join(tmpdir(), 'sandbox-bench-memory-'));
  const cliPath = await ensureTemporalCli(logger, temporalCliOptions(loadConfig()));
  const devServer = await startDevServer(
    { cliPath, port: await freePort(), uiPort: null, databaseFile: null, logFile: join(scratch, 'temporal.log'), namespace: 'default' },
    logger,
  );
  try {
    console.log(
      `npm start on the embedded default (PGlite), its process tree's resident set from /proc every ${SAMPLE_EVERY_MS} ms; ${cpus().length} CPU(s), Node ${process.version}.`,
    );
    console.log(`Load average before: ${formatLoad()}.\n`);
    const dataDir = join(scratch, 'data');
    for (const run of ['first start (new data directory)', 'restart (same data directory)']) {
      const measured = await measureStart(dataDir, devServer.address);
      console.log(`${run}: ready in ${measured.startSeconds.toFixed(1)} s`);
      console.log(
        `  peak while starting ${measured.peakMiB.toFixed(0)} MiB | goal < ${GOALS.startPeakMiB} MiB: ${met(measured.peakMiB < GOALS.startPeakMiB)}`,
      );
      console.log(
        `  idle (${settleSeconds} s after ready, highest of ${idleSeconds} s) ${measured.idleMiB.toFixed(0)} MiB (lowest ${measured.idleLowMiB.toFixed(0)}) | goal < ${GOALS.idleMiB} MiB: ${met(measured.idleMiB < GOALS.idleMiB)}`,
      );
    }
    console.log(
      `\nNot counted above: the Temporal dev server, ${residentMiB(devServer.pid).toFixed(0)} MiB now (npm start runs one unless TEMPORAL_ADDRESS is set).`,
    );
    console.log(`Load average after: ${formatLoad()}.`);
  } finally {
    await devServer.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
