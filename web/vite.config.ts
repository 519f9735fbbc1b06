import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The web app: built into dist/web and served by Parley itself (src/api/web.ts). In
// development, `npm run dev:web` proxies the API to a running `parley serve`.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  plugins: [react()],
  resolve: {
    alias: { 'parley/client': fileURLToPath(new URL('../src/client/index.ts', import.meta.url)) },
  },
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
  },
  server: {
    proxy: { '/api': process.env.PARLEY_URL ?? 'http://127.0.0.1:8080' },
  },
});
