// Validation against the data's property catalog, for commands that go on to plan the criteria.

import { type AudienceCriteria, validateCriteria } from '../criteria/index.js';
import type { OpenedData } from './data.js';
import type { Output } from './output.js';

/** The validated criteria, or null after printing the faults (the caller exits 1). */
export async function validatedCriteria(out: Output, data: OpenedData, raw: unknown, file: string, json: boolean): Promise<AudienceCriteria | null> {
  const result = validateCriteria(raw, await data.stores.analytics.propertyCatalog(data.workspaceId));
  if (result.ok) return result.criteria;
  if (json) {
    out.json({ valid: false, errors: result.errors });
  } else {
    out.print(`${file}: ${result.errors.length} error${result.errors.length > 1 ? 's' : ''}`);
    out.criteriaErrors(result.errors);
  }
  return null;
}
