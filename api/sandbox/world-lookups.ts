import { ApiProblem } from '../http/problem';

/** A patient as a filter value: `syn-pat-0001` or `Patient/syn-pat-0001`. */
export function patientIdFrom(value: string): string {
  return value.startsWith('Patient/') ? value.slice('Patient/'.length) : value;
}

export function resourceNotFound(type: string, id: string): ApiProblem {
  return new ApiProblem(404, 'not_found', `No ${type} with id ${id} exists in the synthetic world.`);
}
