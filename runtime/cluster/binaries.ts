import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The official Temporal server (`temporal-server`) and its schema tool (`temporal-sql-tool`), built
 * from the Go module in ./temporal-server/ at the version its go.mod requires: the version of the
 * time-skipping test server and of docker-compose.yml's images.
 */

const MODULE_DIR = fileURLToPath(new URL('./temporal-server/', import.meta.url));

export interface ClusterBinaries {
  version: string;
  server: string;
  sqlTool: string;
}

/** The go.temporal.io/server version the module pins (go.mod is the one place it is written). */
export function temporalServerVersion(): string {
  const goMod = readFileSync(join(MODULE_DIR, 'go.mod'), 'utf8');
  const version = goMod.match(/^require go\.temporal\.io\/server v(\S+)$/m)?.[1];
  if (!version) throw new Error(`${join(MODULE_DIR, 'go.mod')} does not require go.temporal.io/server`);
  return version;
}

/**
 * Outside the clone and keyed by version, so every clone on the machine reuses one build:
 * TEMPORAL_SERVER_BIN_DIR, else $XDG_CACHE_HOME (or ~/.cache)/healthcare-sandbox/temporal-server-<version>.
 */
export function clusterBinaryDir(version: string, env: NodeJS.ProcessEnv = process.env): string {
  if (env.TEMPORAL_SERVER_BIN_DIR) return env.TEMPORAL_SERVER_BIN_DIR;
  const cache = env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(cache, 'healthcare-sandbox', `temporal-server-${version}`);
}

const PACKAGES = [
  { binary: 'temporal-server', goPackage: 'go.temporal.io/server/cmd/server' },
  { binary: 'temporal-sql-tool', goPackage: 'go.temporal.io/server/cmd/tools/sql' },
] as const;

/** Returns the cached binaries, building the missing ones with `go build` first (minutes, once per version). */
export function ensureClusterBinaries(log: (message: string) => void): ClusterBinaries {
  const version = temporalServerVersion();
  const dir = clusterBinaryDir(version);
  const path = (binary: string) => join(dir, binary);
  const missing = PACKAGES.filter(({ binary }) => !existsSync(path(binary)));
  if (missing.length > 0) {
    const go = ['go', '/usr/local/go/bin/go'].find((candidate) => spawnSync(candidate, ['version']).status === 0);
    if (!go) throw new Error(`The Temporal server ${version} is not built in ${dir} and Go is not installed to build it (https://go.dev/dl).`);
    mkdirSync(dir, { recursive: true });
    for (const { binary, goPackage } of missing) {
      log(`Building ${binary} ${version} (${goPackage}) into ${dir} with ${go} build; first time only, a few minutes…`);
      const started = Date.now();
      // Built under a temporary name and renamed, so an interrupted build never leaves a broken binary behind.
      const partial = `${path(binary)}.partial`;
      const built = spawnSync(go, ['build', '-o', partial, goPackage], { cwd: MODULE_DIR, stdio: ['ignore', 'inherit', 'inherit'] });
      if (built.status !== 0) throw new Error(`go build of ${goPackage} failed (exit ${built.status})`);
      renameSync(partial, path(binary));
      log(`Built ${binary} in ${Math.round((Date.now() - started) / 1000)} s`);
    }
  }
  return { version, server: path('temporal-server'), sqlTool: path('temporal-sql-tool') };
}
