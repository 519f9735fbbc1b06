import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The example app: `npm run dev` style serving with the Parley API proxied, so the page
// and the API share an origin. PARLEY_URL points at a running `parley serve`.
const target = process.env.PARLEY_URL ?? 'http://127.0.0.1:8080';
const proxy = { '/api': { target, changeOrigin: false } };

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  plugins: [react()],
  resolve: {
    alias: {
      'parley/client': fileURLToPath(new URL('../../src/client/index.ts', import.meta.url)),
      'parley/ai-sdk': fileURLToPath(new URL('../../src/ai-sdk/index.ts', import.meta.url)),
    },
  },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', chunkSizeWarningLimit: 1000 },
  server: { proxy },
  preview: { proxy },
});
