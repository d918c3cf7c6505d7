import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["__test__/**/*.test.mjs"],
    setupFiles: ["__test__/setup-turn.mjs"],
    testTimeout: 180_000,
    hookTimeout: 180_000,
    // Two cores: the differential suite and the pi end-to-end tests are heavy.
    maxWorkers: 2,
  },
});
