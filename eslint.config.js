// Lint rules: the recommended sets of ESLint and typescript-eslint, with type information off so
// a lint run stays fast; `tsc --noEmit` does the type checking.
import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "test-results/", "scratch/", ".data/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "no-constant-condition": ["error", { checkLoops: false }],
    },
  },
  {
    // Code that runs in the browser (mock pages, the dashboard).
    files: ["fixtures/**/*.js", "src/dashboard/**/*.{ts,tsx}"],
    languageOptions: { globals: { ...globals.browser } },
  },
);
