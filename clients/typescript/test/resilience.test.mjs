// Retries against the real gateway: an answer lost on the way, a spent rate
// limit, and a key whose first request is still running.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import { Client, ErrorName } from "../dist/index.js";
import { payment, startGateway } from "./harness.mjs";

/** Starts an HTTP server on a loopback port; closed when the test ends. */
async function listen(t, handler) {
  const server = createServer(handler);
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    server.closeAllConnections(); // idle keep-alive connections too
    return new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${server.address().port}`;
}

// Two ways a proxy loses the first answer: the connection closes, or the
// proxy answers its own 502 page, as nginx does when the node dies holding
// the request.
const LOSE = {
  "the connection closes": (req) => req.socket.destroy(),
  "a proxy's 502 page": (req, res) => {
    res.writeHead(502, { "Content-Type": "text/html" });
    res.end("<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>");
  },
};

for (const [how, lose] of Object.entries(LOSE)) test(`an answer lost on the way (${how}): the retry reuses the key and one payment exists`, async (t) => {
  const g = await startGateway(t);
  // The proxy passes every request to the gateway; it loses the first
  // answer.
  const seen = [];
  let dropped;
  const proxy = await listen(t, async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const headers = { ...req.headers };
    for (const h of ["host", "connection", "content-length", "transfer-encoding"]) delete headers[h];
    const up = await fetch(g.url + req.url, {
      method: req.method,
      headers,
      body: chunks.length ? Buffer.concat(chunks) : undefined,
    });
    const body = await up.text();
    seen.push(req.headers["idempotency-key"]);
    if (seen.length === 1) {
      dropped = body; // the gateway answered; the client never hears it
      lose(req, res);
      return;
    }
    res.writeHead(up.status, Object.fromEntries(up.headers));
    res.end(body);
  });

  const waits = [];
  const c = new Client({
    baseUrl: proxy,
    apiKey: g.merchant.testSecretKey,
    sleep: (ms) => {
      waits.push(ms);
      return new Promise((r) => setTimeout(r, ms));
    },
  });
  let info;
  const res = await c.createPayment(payment("4242424242424242", "order-drop"), { onResponse: (i) => (info = i) });
  assert.equal(seen.length, 2);
  assert.equal(seen[0], info.idempotencyKey, "the first attempt's key");
  assert.equal(seen[1], info.idempotencyKey, "the retry's key");
  assert.equal(info.attempts, 2);
  assert.equal(waits.length, 1);
  assert.equal(info.replayed, true, "the retry is answered with the stored answer: nothing ran again");
  assert.equal(JSON.parse(dropped).data.id, res.id, "the dropped answer and the retry's are of one payment");
  // A second payment made by the retry would carry the same reference and
  // be the newer one, which the lookup returns.
  assert.equal((await c.lookupPayment("order-drop")).id, res.id);
});

test("429: the retry waits the gateway's Retry-After, then succeeds", async (t) => {
  // 30 a minute: a spent budget frees a request every 2 s.
  const g = await startGateway(t, "--rate-limit-test", "30");
  const res = await new Client({ baseUrl: g.url, apiKey: g.merchant.testSecretKey }).createPayment(payment("4242424242424242", "order-rl"));
  const noRetry = new Client({ baseUrl: g.url, apiKey: g.merchant.testSecretKey, maxRetries: 0 });
  for (let i = 0; ; i++) {
    const err = await noRetry.getPayment(res.id).then(() => undefined, (e) => e);
    if (err?.name === ErrorName.RateLimited) break;
    assert.ok(err === undefined && i <= 60, `request ${i} of a budget of 30: ${err}`);
  }

  let retryAfter;
  const recording = async (url, init) => {
    const r = await fetch(url, init);
    if (r.status === 429) retryAfter ??= r.headers.get("Retry-After");
    return r;
  };
  const waits = [];
  const c = new Client({
    baseUrl: g.url,
    apiKey: g.merchant.testSecretKey,
    fetch: recording,
    backoff: () => 10,
    sleep: (ms) => {
      waits.push(ms);
      return new Promise((r) => setTimeout(r, ms));
    },
  });
  let info;
  const p = await c.getPayment(res.id, { onResponse: (i) => (info = i) });
  assert.equal(p.id, res.id);
  assert.equal(info.attempts, 2);
  assert.ok(Number(retryAfter) >= 1, `Retry-After ${retryAfter}`);
  assert.deepEqual(waits, [Number(retryAfter) * 1000], "waited exactly the gateway's Retry-After");
});

test("one key twice at once: the second meets the first in flight, retries and gets its answer", async (t) => {
  const g = await startGateway(t);
  const c = new Client({ baseUrl: g.url, apiKey: g.merchant.testSecretKey, maxRetries: 10 });
  // Card 0705: the sandbox answers after 2 s that the outcome is unknown
  // (202, status created), so the first request runs for 2 s.
  const infos = [{}, {}];
  const call = (i) =>
    c.createPayment(payment("4000000000000705", "order-if"), { idempotencyKey: "order-if", onResponse: (x) => (infos[i] = x) });
  const first = call(0);
  await new Promise((r) => setTimeout(r, 300)); // let the first one in
  const [a, b] = await Promise.all([first, call(1)]);
  assert.equal(a.id, b.id);
  assert.equal(a.status, "created");
  assert.equal(infos[0].status, 202);
  assert.notEqual(infos[0].replayed, infos[1].replayed, "one ran, the other got its stored answer");
  assert.ok(Math.max(infos[0].attempts, infos[1].attempts) >= 2, "after a retry");
});
