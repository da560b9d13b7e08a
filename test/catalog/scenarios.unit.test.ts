import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { scenarios } from '../../catalog/scenarios';
import { defineScenario, type ScenarioDefinition } from '../../catalog/scenarios/definition';
import type { priorAuthDenied } from '../../catalog/scenarios/prior-auth-denied';

const root = join(import.meta.dirname, '../..');

/** The step ids a plan profile names. */
function stepsNamedByPlan(scenario: ScenarioDefinition): string[] {
  const { plan } = scenario;
  if (plan.kind === 'prior_auth') return [plan.submitStep, ...plan.pendSteps, plan.decisionStep, ...plan.afterApproval];
  if (plan.kind === 'claim') return [plan.adjudicationStep, plan.paymentStep];
  return [];
}

describe('scenario definitions', () => {
  it('type their step ids: a plan naming a step the scenario does not have does not compile', () => {
    expectTypeOf<(typeof priorAuthDenied.steps)[number]['id']>().toEqualTypeOf<'order_placed' | 'request_submitted' | 'request_denied'>();
    const withTypo = () =>
      defineScenario({
        id: 'typo',
        name: 'A scenario with a typo',
        description: 'Its decision step is misspelled.',
        steps: [
          { id: 'request_submitted', description: 'Submitted.', emits: [], typicalDelaySeconds: 0 },
          { id: 'request_denied', description: 'Denied.', emits: [], typicalDelaySeconds: 60 },
        ],
        plan: {
          kind: 'prior_auth',
          service: 'mriLumbar',
          outcomes: ['denied'],
          natural: 'denied',
          submitStep: 'request_submitted',
          pendSteps: [],
          // @ts-expect-error: 'request_denyed' is not one of the scenario's steps
          decisionStep: 'request_denyed',
          afterApproval: [],
        },
        story: { setting: 'orthopaedics', diagnosis: 'lowBackPain', order: 'imaging', result: null },
      });
    expect(withTypo).toBeTypeOf('function');
  });

  it.each(scenarios.map((scenario) => [scenario.id, scenario] as const))(
    '%s: its step ids are unique and its plan names its own steps',
    (_id, scenario) => {
      const ids = scenario.steps.map((step) => step.id);
      expect(new Set(ids).size).toBe(ids.length);
      for (const named of stepsNamedByPlan(scenario)) expect(ids).toContain(named);
    },
  );

  it('lists every definition in catalog/scenarios/, each once', () => {
    const files = readdirSync(join(root, 'catalog/scenarios')).filter((file) => file !== 'definition.ts');
    const ids = scenarios.map((scenario) => scenario.id);
    expect(new Set(ids).size).toBe(ids.length);
    // One file per scenario, named after its id.
    expect(files.map((file) => file.replace(/\.ts$/, '').replaceAll('-', '_')).sort()).toEqual([...ids].sort());
  });

  it('is the only place that asks which scenario it is: no code outside catalog/scenarios/ compares a scenario id with a literal', () => {
    const skip = new Set(['node_modules', 'test', 'bench', 'docs', 'catalog/scenarios', '.data', '.git', '.tools']);
    const branches: string[] = [];
    const walk = (folder: string) => {
      for (const entry of readdirSync(folder, { withFileTypes: true })) {
        const path = join(folder, entry.name);
        if (skip.has(relative(root, path))) continue;
        if (entry.isDirectory()) walk(path);
        else if (entry.name.endsWith('.ts')) {
          for (const match of readFileSync(path, 'utf8').matchAll(/(scenario_?[iI]d|scenario\.id)\s*[!=]==?\s*['"`]/g)) {
            branches.push(`${relative(root, path)}: ${match[0]}`);
          }
        }
      }
    };
    walk(root);
    expect(branches).toEqual([]);
  });
});
