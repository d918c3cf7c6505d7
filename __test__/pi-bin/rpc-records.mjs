// JSONL records of a `pi --mode rpc` child: every stdout line parsed (an unparsable line kept as
// `{ type: "unparsed", line }`), stderr collected, and waiters for the first record matching a
// predicate (already seen or later). Waiters fail when the child exits or time runs out.
// Shared by the real-bin suites (__test__/pi-bin, __test__/pi-ext).
export function rpcRecords(child) {
  const records = [];
  const waiters = [];
  let buf = "";
  let stderr = "";
  let exitState = null;
  child.stderr.setEncoding("utf8").on("data", (d) => {
    stderr += d;
  });
  child.stdout.setEncoding("utf8").on("data", (chunk) => {
    buf += chunk;
    for (let nl = buf.indexOf("\n"); nl !== -1; nl = buf.indexOf("\n")) {
      const line = buf.slice(0, nl).replace(/\r$/, "");
      buf = buf.slice(nl + 1);
      if (!line.trim()) continue;
      let rec;
      try {
        rec = JSON.parse(line);
      } catch {
        rec = { type: "unparsed", line };
      }
      records.push(rec);
      for (const w of [...waiters]) {
        if (w.pred(rec)) {
          waiters.splice(waiters.indexOf(w), 1);
          clearTimeout(w.timer);
          w.resolve(rec);
        }
      }
    }
  });
  const exited = new Promise((resolve) =>
    child.on("close", (code, signal) => {
      exitState = { code, signal };
      for (const w of waiters.splice(0)) {
        clearTimeout(w.timer);
        w.reject(new Error(`pi exited (${code ?? signal}) while waiting for ${w.what}; stderr:\n${stderr}`));
      }
      resolve(exitState);
    }),
  );
  const waitFor = (pred, what = "an rpc record", ms = 30_000) => {
    const seen = records.find(pred);
    if (seen) return Promise.resolve(seen);
    if (exitState)
      return Promise.reject(new Error(`pi already exited (${exitState.code ?? exitState.signal}); stderr:\n${stderr}`));
    return new Promise((resolve, reject) => {
      const w = { pred, what, resolve, reject };
      w.timer = setTimeout(() => {
        waiters.splice(waiters.indexOf(w), 1);
        reject(
          new Error(
            `rpc: timed out waiting for ${what}; got ${records.map((r) => r.type).join(", ")}; stderr:\n${stderr}`,
          ),
        );
      }, ms);
      waiters.push(w);
    });
  };
  return { records, waitFor, exited, stderr: () => stderr, exitState: () => exitState };
}
