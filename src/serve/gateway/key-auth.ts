import type { KeyLimits } from '../../keys/key-limits.js';
import { keyBudgetRules, keyTags, readPresentedKey, type KeyDirectory } from '../../keys/virtual-keys.js';
import type { Admission, GatewayAuth, Principal } from './principal.js';

/**
 * Virtual keys as the gateway's principals: the directory says who a key is (from memory, no database
 * read for a key it knows), the limits how much it may do now, and the key's own tags and budget rules
 * go on everything it spends.
 */
export function virtualKeyAuth(directory: KeyDirectory, limits: KeyLimits): GatewayAuth {
  return {
    async authenticate(headers) {
      const result = await directory.authenticate(readPresentedKey(headers));
      if (!result.ok) return { ok: false, message: result.message };
      const { key } = result;
      const principal: Principal = {
        id: key.id,
        name: key.name,
        tags: keyTags(key),
        budgetRules: keyBudgetRules(key),
        models: key.models,
        admit: async (): Promise<Admission> => {
          const admission = await limits.admit(key);
          if (admission.ok) return { ok: true, release: (tokens) => admission.release(tokens) };
          return { ok: false, retryAfterMs: admission.retryAfterMs, message: admission.message };
        },
      };
      return { ok: true, principal };
    },
  };
}
