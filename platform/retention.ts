/**
 * What the retention Schedule purges (runtime/retention-schedule.ts): the workflow walks this list,
 * the activity purges each kind. Here, below both, so neither imports the other for it.
 */

