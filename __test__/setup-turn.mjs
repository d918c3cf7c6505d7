// Every test starts on a fresh turn of the event loop. vitest awaits between tests with
// promises only, so a file of synchronous tests (differential.test.mjs: hundreds of them) never
// lets its worker read the runner's answers: an RPC unanswered for 60 s fails the run with
// "Timeout calling onTaskUpdate" although every test passed. Under Wine (`npm run test:cross`)
// a file's synchronous run is that long.
import { beforeEach } from "vitest";

beforeEach(() => new Promise((resolve) => setImmediate(resolve)));
