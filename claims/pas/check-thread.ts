import { loadProfileValidator } from '../../fhir/validation/profile-validator';
import { checkPasRequest, type PasCheck, type PasOperation } from './request';

/** A thread's task (./off-loop.ts): checks one PAS request with this thread's validator, loaded on its first task. */
export default async function checkPasRequestTask({ body, operation }: { body: unknown; operation: PasOperation }): Promise<PasCheck> {
  return checkPasRequest(body, operation, await loadProfileValidator());
}
