import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';

/**
 * Run by startWorker as a child process: bundles the workflows (argv[2]) with webpack and sends the
 * code back. Webpack needs about 95 MiB while it works; in a child that memory goes away with it
 * instead of staying in the worker's resident set for good.
 */
const { code } = await bundleWorkflowCode({ workflowsPath: process.argv[2]!, logger: new DefaultLogger('WARN') });
process.send!(code, () => process.exit(0));
