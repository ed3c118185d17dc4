// Test files, the longest first, so that two workers end together instead of one running the
// slowest file alone at the end. A fresh clone (CI's) has no vitest cache of earlier durations, and
// vitest then runs the largest files first, which is not the same: the durations of a full run are
// kept in test/support/file-times.json (`npm run test:times`, then `npm run test:times:save`).

import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { FULL_TIER } from './tier.js';

type FileTimes = Record<'default' | 'ci', Record<string, number>>;

const TIMES_FILE = new URL('./file-times.json', import.meta.url);

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const times = readTimes()[FULL_TIER ? 'ci' : 'default'];
    // A file not measured yet (a new one) goes first, as vitest does with files it has no figure for.
    const seconds = (spec: TestSpecification) => times[relative(this.ctx.config.root, spec.moduleId).replaceAll('\\', '/')] ?? Infinity;
    const fallback = await super.sort(files);
    return fallback.map((spec, at) => ({ spec, at, s: seconds(spec) }))
      .sort((a, b) => (b.s === a.s ? a.at - b.at : b.s - a.s))
      .map(({ spec }) => spec);
  }
}

function readTimes(): FileTimes {
  try {
    return JSON.parse(readFileSync(TIMES_FILE, 'utf8')) as FileTimes;
  } catch {
    return { default: {}, ci: {} };
  }
}
