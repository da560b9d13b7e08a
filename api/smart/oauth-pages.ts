import escapeHtml from 'escape-html';
import type { Patient } from 'fhir/r4';
import { SMART_PATHS } from '../../smart/endpoints';

/** The two pages a person sees during authorization: an error that is never redirected, and the patient picker. */

const STYLE = `
  body { font: 16px/1.5 system-ui, sans-serif; margin: 0; background: #f4f6f8; color: #1d2733; }
  main { max-width: 46rem; margin: 2rem auto; background: #fff; padding: 1.5rem 2rem; border-radius: 8px; box-shadow: 0 1px 3px #0002; }
  h1 { font-size: 1.4rem; margin-top: 0; }
  .note { color: #5a6673; font-size: .9rem; }
  form.search { display: flex; align-items: center; gap: .5rem; margin: 1rem 0; }
  input[type=search] { flex: 1; font: inherit; padding: .4rem .6rem; border: 1px solid #aab4be; border-radius: 4px; }
  button { font: inherit; padding: .4rem .9rem; border-radius: 4px; border: 1px solid #2457a6; background: #2f6fd1; color: #fff; cursor: pointer; }
  button.secondary { background: #fff; color: #2457a6; }
  table { width: 100%; border-collapse: collapse; }
  th, td { text-align: left; padding: .45rem .4rem; border-bottom: 1px solid #e3e7eb; }
  td form { margin: 0; }
  code { background: #eef1f4; padding: 0 .25rem; border-radius: 3px; }`;

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${escapeHtml(title)} · Synthetic Healthcare Sandbox</title>
  <style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>`;
}

export function authorizationErrorPage(title: string, detail: string): string {
  return page(
    title,
    `<h1>${escapeHtml(title)}</h1>
<p>${escapeHtml(detail)}</p>
<p class="note">This sandbox does not redirect to an address it cannot trust. Fix the app's request (or its registration with
<code>POST /v1/smart/clients</code>) and launch again.</p>`,
  );
}

export interface PatientPickerView {
  requestId: string;
  clientName: string;
  query: string;
  patients: readonly Patient[];
  /** How many patients match the query, of which `patients` is the first few. */
  matching: number;
}

export function patientPickerPage(view: PatientPickerView): string {
  const request = escapeHtml(view.requestId);
  const rows = view.patients
    .map(
      (patient) => `    <tr>
      <td>${escapeHtml(displayName(patient))}</td>
      <td>${escapeHtml(patient.gender ?? '')}</td>
      <td>${escapeHtml(patient.birthDate ?? '')}</td>
      <td><code>${escapeHtml(patient.id ?? '')}</code></td>
      <td><form method="post" action="${SMART_PATHS.patientPicker}">
        <input type="hidden" name="request" value="${request}">
        <input type="hidden" name="patient" value="${escapeHtml(patient.id ?? '')}">
        <button type="submit" aria-label="Choose ${escapeHtml(displayName(patient))}">Choose</button>
      </form></td>
    </tr>`,
    )
    .join('\n');
  const shown =
    view.patients.length < view.matching
      ? `Showing ${view.patients.length} of ${view.matching}; search to narrow the list.`
      : `${view.matching} patient(s).`;
  return page(
    'Choose a patient',
    `<h1>Choose a patient for ${escapeHtml(view.clientName)}</h1>
<p class="note">Standalone launch: the app asked for a patient context. Every patient here is synthetic.</p>
<form class="search" method="get" action="${SMART_PATHS.patientPicker}" role="search">
  <input type="hidden" name="request" value="${request}">
  <label for="q" class="note">Name or id</label>
  <input type="search" id="q" name="q" value="${escapeHtml(view.query)}" placeholder="e.g. Garcia" autofocus>
  <button type="submit">Search</button>
</form>
<p class="note" id="result-count">${escapeHtml(shown)}</p>
<table>
  <thead><tr><th>Name</th><th>Gender</th><th>Birth date</th><th>Id</th><th></th></tr></thead>
  <tbody>
${rows}
  </tbody>
</table>
<form method="post" action="${SMART_PATHS.patientPicker}">
  <input type="hidden" name="request" value="${request}">
  <p><button class="secondary" type="submit" name="deny" value="1">Cancel and return to the app</button></p>
</form>`,
  );
}

export function displayName(patient: Patient): string {
  const name = patient.name?.find((candidate) => candidate.use === 'official') ?? patient.name?.[0];
  if (!name) return `Patient ${patient.id ?? ''}`;
  return name.text ?? [...(name.given ?? []), name.family].filter(Boolean).join(' ');
}
