// Unit tests of the client's pure logic; `vscode` is replaced by a small stub (extension/test/unit/vscode.ts).
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    alias: { vscode: fileURLToPath(new URL("./test/unit/vscode.ts", import.meta.url)) },
  },
  test: {
    include: ["extension/test/unit/**/*.test.ts"],
    environment: "node",
  },
});
