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

/**
 * The shared data folder beside the repository (absent in a user's clone); `SWITCHBOARD_SHARED_DIR`
 * points elsewhere, e.g. from a git worktree that does not sit beside it.
 */
export const sharedDirectory =
  process.env['SWITCHBOARD_SHARED_DIR'] ?? fileURLToPath(new URL('../../shared/', import.meta.url));
