// Lets bench scripts run straight from the TypeScript sources under Node 22's type stripping, with no
// build: the sources import each other with `.js` suffixes (as tsc wants); map those to the `.ts` files.
// Import this module first, then load sources with dynamic `import()` (static imports resolve too early).
import { existsSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { fileURLToPath } from 'node:url';

registerHooks({
  resolve(specifier, context, next) {
    if (specifier.startsWith('.') && specifier.endsWith('.js') && context.parentURL?.endsWith('.ts')) {
      const candidate = new URL(specifier.replace(/\.js$/, '.ts'), context.parentURL);
      if (existsSync(fileURLToPath(candidate))) return next(candidate.href, context);
    }
    return next(specifier, context);
  },
});

/** The shared data folder beside the repository (absent in a user's clone). */
export const sharedDirectory = fileURLToPath(new URL('../../shared/', import.meta.url));
