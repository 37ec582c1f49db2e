import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Run from the repository root (`npm run build`): paths are relative to it.
export default defineConfig({
  root: 'src/ui',
  base: '/ui/',
  plugins: [react()],
  build: {
    outDir: '../../dist/ui',
    emptyOutDir: true,
    // No inline scripts or data: modules: the page is served under a strict CSP (script-src 'self').
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 600,
  },
});
