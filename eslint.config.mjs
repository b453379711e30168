// `npm run check` runs this with --max-warnings=0 on extension/.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "extension/bundled/**", "node_modules/**", "test-artifacts/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["extension/**/*.ts"],
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
      eqeqeq: "error",
      curly: "error",
      "no-console": ["error", { allow: ["log", "error"] }],
    },
  },
  {
    files: ["extension/**/*.mjs"],
    languageOptions: {
      // Node globals; `document` only inside page.evaluate() callbacks, which run in the browser.
      globals: {
        process: "readonly",
        console: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly",
        URL: "readonly",
        fetch: "readonly",
        document: "readonly",
      },
    },
  },
);
