// ESLint (flat config): the browser modules under frontend/static/js and the local
// SurrealDB server (Node). Run with `npm run lint`; bin/test runs it too.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';

export default defineConfig([
  { ignores: ['node_modules/', 'var/', '.venv/', 'artifacts/', 'build/', 'dist/'] },
  js.configs.recommended,
  {
    files: ['frontend/static/js/**/*.js'],
    languageOptions: {
      ecmaVersion: 'latest',
      sourceType: 'module',
      // Cytoscape and its fcose layout are loaded by classic <script> tags before the modules.
      globals: { ...globals.browser, cytoscape: 'readonly' },
    },
  },
  {
    files: ['surreal/**/*.mjs', 'eslint.config.js'],
    languageOptions: { ecmaVersion: 'latest', sourceType: 'module', globals: globals.node },
  },
]);
