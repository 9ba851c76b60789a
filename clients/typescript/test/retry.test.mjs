// The retry rules one by one, against a scripted server on loopback: each
// attempt gets the next scripted answer. Waits are recorded, not slept.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { describe, test } from "node:test";
import { Client, ErrorName, LostAnswerError, PaygateError, TransportError, exponentialBackoff, retryAfterMs } from "../dist/index.js";

const PAYMENT = { id: "0190b6a2-7c1d-7000-8000-000000000001", status: "captured", amount: "10.50" };

/**
 * Starts a server answering the script: { status, headers, name } answers
 * with the envelope, { raw } with that body, { drop: true } closes the
 * connection; past the script, 200 with a payment. Returns the server's
 * URL and the requests it saw.
 */
async function scripted(t, answers = []) {
  const seen = [];
  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    seen.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() });
    const a = answers[seen.length - 1] ?? { status: 200 };
    if (a.drop) {
      req.socket.destroy();
      return;
    }
    res.writeHead(a.status, { "Content-Type": "application/json", "X-Request-Id": `req-${seen.length}`, ...a.headers });
    if (a.raw !== undefined) res.end(a.raw);
    else if (a.status < 300) res.end(JSON.stringify({ data: PAYMENT }));
    else res.end(JSON.stringify({ data: null, error: { status: a.status, name: a.name, message: "scripted" } }));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${server.address().port}`, seen };
}

/** A client of url whose backoff is the retry's number in ms and whose waits are recorded. */
function recordingClient(url, options = {}) {
  const waits = [];
  const client = new Client({
    baseUrl: url,
    apiKey: "smtgw_sk_test_key",
    backoff: (n) => n,
    sleep: async (ms, signal) => {
      waits.push(ms);
      signal?.throwIfAborted();
    },
    ...options,
  });
  return { client, waits };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("retries", () => {
  const ra = (v) => ({ "Retry-After": v });
  const cases = [
    { name: "ok", answers: [], attempts: 1, waits: [] },
    { name: "429 honours Retry-After", answers: [{ status: 429, name: ErrorName.RateLimited, headers: ra("3") }], attempts: 2, waits: [3000] },
    {
      name: "503 without Retry-After backs off",
      answers: [{ status: 503, name: ErrorName.ServiceUnavailable }, { status: 503, name: ErrorName.ServiceUnavailable }],
      attempts: 3,
      waits: [1, 2],
    },
    { name: "409 in flight is retried", answers: [{ status: 409, name: ErrorName.DuplicateRequest, headers: ra("1") }], attempts: 2, waits: [1000] },
    { name: "a network error is retried", answers: [{ drop: true }, { drop: true }], attempts: 3, waits: [1, 2] },
    { name: "409 for another body is not retried", answers: [{ status: 409, name: ErrorName.DuplicateRequest }], attempts: 1, waits: [], error: ErrorName.DuplicateRequest },
    { name: "a decline is not retried", answers: [{ status: 400, name: ErrorName.CardDeclined }], attempts: 1, waits: [], error: ErrorName.CardDeclined },
    { name: "a provider error is not retried", answers: [{ status: 502, name: ErrorName.ProviderError }], attempts: 1, waits: [], error: ErrorName.ProviderError },
    { name: "500 is not retried", answers: [{ status: 500, name: ErrorName.InternalError }], attempts: 1, waits: [], error: ErrorName.InternalError },
    {
      // A proxy's 5xx page is not paygate's answer: the request may have been
      // processed, so it is retried with the same key.
      name: "a proxy's 5xx page is retried",
      answers: [{ status: 502, raw: "<html>Bad Gateway</html>" }, { status: 504, raw: "<html>Gateway Time-out</html>" }],
      attempts: 3,
      waits: [1, 2],
    },
    { name: "a proxy's 5xx page honours Retry-After", answers: [{ status: 503, raw: "Service Unavailable", headers: ra("2") }], attempts: 2, waits: [2000] },
    { name: "a proxy's 4xx page is final", answers: [{ status: 413, raw: "<html>Request Entity Too Large</html>" }], attempts: 1, waits: [], error: "PaygateError" },
    {
      name: "retries run out",
      answers: Array(6).fill({ status: 503, name: ErrorName.ServiceUnavailable }),
      attempts: 5,
      waits: [1, 2, 3, 4],
      error: ErrorName.ServiceUnavailable,
    },
  ];
  for (const tc of cases) {
    test(tc.name, async (t) => {
      const s = await scripted(t, tc.answers);
      const { client, waits } = recordingClient(s.url);
      let info;
      const out = await client
        .createPayment({ amount: "10.50", currency: "EUR", customerId: "c" }, { onResponse: (i) => (info = i) })
        .then((r) => r, (e) => e);
      assert.equal(s.seen.length, tc.attempts);
      assert.equal(info.attempts, tc.attempts);
      assert.deepEqual(waits, tc.waits);
      const key = s.seen[0].headers["idempotency-key"];
      assert.match(key, UUID);
      assert.equal(info.idempotencyKey, key);
      for (const r of s.seen) {
        assert.equal(r.headers["idempotency-key"], key, "every attempt sends the call's key");
        assert.equal(r.body, s.seen[0].body, "and the same body");
        assert.equal(r.method, "POST");
        assert.equal(r.url, "/v1/payments");
        assert.equal(r.headers["x-api-key"], "smtgw_sk_test_key");
        assert.equal(r.headers["content-type"], "application/json");
      }
      if (!tc.error) {
        assert.deepEqual(out, PAYMENT);
        return;
      }
      assert.ok(out instanceof PaygateError, String(out));
      assert.equal(out.name, tc.error);
      assert.equal(out.idempotencyKey, key);
      assert.equal(out.requestId, `req-${tc.attempts}`);
    });
  }

  test("no answer on every attempt: a TransportError naming the key", async (t) => {
    const s = await scripted(t, [{ drop: true }, { drop: true }, { drop: true }]);
    const { client } = recordingClient(s.url, { maxRetries: 2 });
    await assert.rejects(client.createPayment({ amount: "1", currency: "EUR", customerId: "c" }, { idempotencyKey: "k-1" }), (err) => {
      assert.ok(err instanceof TransportError);
      assert.equal(err.attempts, 3);
      assert.equal(err.idempotencyKey, "k-1");
      assert.ok(err.cause);
      return true;
    });
  });

  test("a proxy's 5xx page on every attempt: a TransportError naming the key, not a PaygateError", async (t) => {
    const page = { status: 502, raw: "<html><center><h1>502 Bad Gateway</h1></center></html>" };
    const s = await scripted(t, [page, page, page]);
    const { client } = recordingClient(s.url, { maxRetries: 2 });
    await assert.rejects(client.createPayment({ amount: "1", currency: "EUR", customerId: "c" }, { idempotencyKey: "order-9" }), (err) => {
      assert.ok(err instanceof TransportError, String(err));
      assert.ok(!(err instanceof PaygateError));
      assert.equal(err.attempts, 3);
      assert.equal(err.idempotencyKey, "order-9");
      assert.ok(err.cause instanceof LostAnswerError);
      assert.equal(err.cause.status, 502);
      assert.equal(err.cause.requestId, "req-3");
      assert.match(err.message, /no answer after 3 attempt\(s\).*502/);
      return true;
    });
    assert.deepEqual(s.seen.map((r) => r.headers["idempotency-key"]), ["order-9", "order-9", "order-9"]);
  });

  test("a retry that could not start before the deadline is not waited for", async (t) => {
    const s = await scripted(t, [{ status: 429, name: ErrorName.RateLimited, headers: ra("30") }]);
    const { client, waits } = recordingClient(s.url);
    await assert.rejects(client.getPayment("p", { deadlineMs: 5000 }), { name: ErrorName.RateLimited, retryAfterMs: 30_000 });
    assert.equal(s.seen.length, 1);
    assert.deepEqual(waits, []);
  });

  test("aborting the call ends its wait", async () => {
    const client = new Client({ baseUrl: "http://127.0.0.1:1", apiKey: "k", backoff: () => 3_600_000 }); // nothing listens on port 1
    const started = Date.now();
    await assert.rejects(client.getPayment("p", { signal: AbortSignal.timeout(50) }), TransportError);
    assert.ok(Date.now() - started < 3_600_000);
  });
});

test("call options and what each call sends", async (t) => {
  const s = await scripted(t);
  const { client } = recordingClient(s.url);
  await client.createPayment({ amount: "1", currency: "EUR", customerId: "c" }, { idempotencyKey: "order-1", requestId: "trace.1" });
  await client.createPayment({ amount: "1", currency: "EUR", customerId: "c" });
  await client.createPayment({ amount: "1", currency: "EUR", customerId: "c" });
  await client.lookupPayment("order 1&x=y", { idempotencyKey: "ignored" });
  await client.deleteCard("c/1", "k 2");
  await client.capturePayment("p");
  await client.capturePayment("p", { amount: "1.00" });
  await client.voidPayment("p");
  await client.saveCard("c", { number: "4242424242424242", expiryMonth: "12", expiryYear: "30", holderName: "A" });
  const r = s.seen;
  assert.equal(r[0].headers["idempotency-key"], "order-1");
  assert.equal(r[0].headers["x-request-id"], "trace.1");
  assert.match(r[0].headers["user-agent"], /paygate-node\//);
  assert.notEqual(r[1].headers["idempotency-key"], r[2].headers["idempotency-key"]);
  assert.deepEqual([r[3].method, r[3].url, r[3].headers["idempotency-key"], r[3].body], ["GET", "/v1/payments?merchantRef=order+1%26x%3Dy", undefined, ""]);
  assert.deepEqual([r[4].method, r[4].url], ["DELETE", "/v1/customers/c%2F1/cards/k%202"]);
  assert.deepEqual(r.slice(5).map((x) => `${x.url} ${x.body}`), [
    "/v1/payments/p/capture {}",
    '/v1/payments/p/capture {"amount":"1.00"}',
    "/v1/payments/p/void {}",
    '/v1/customers/c/cards {"card":{"number":"4242424242424242","expiryMonth":"12","expiryYear":"30","holderName":"A"}}',
  ]);
  await assert.rejects(client.getPayment(""), TypeError);
  assert.equal(s.seen.length, 9, "an empty id sends nothing");
});

test("exponential backoff: capped, jittered in the upper half", () => {
  const low = exponentialBackoff(500, 8000, () => 0);
  const high = exponentialBackoff(500, 8000, () => 0.999999);
  for (const [n, ceiling] of [[1, 500], [2, 1000], [3, 2000], [4, 4000], [5, 8000], [6, 8000], [1000, 8000]]) {
    assert.equal(low(n, 0), ceiling / 2, `retry ${n}`);
    assert.ok(high(n, 0) <= ceiling && high(n, 0) >= ceiling - 1, `retry ${n}: ${high(n, 0)}`);
  }
  const draws = new Set(Array.from({ length: 20 }, () => exponentialBackoff(1000, 4000)(3, 0)));
  assert.ok(draws.size > 1, "jitter");
  for (const d of draws) assert.ok(d >= 2000 && d <= 4000, String(d));
});

test("Retry-After: seconds or an HTTP date", () => {
  const now = Date.parse("2031-03-14T15:09:26Z");
  assert.equal(retryAfterMs(null, now), 0);
  assert.equal(retryAfterMs("1", now), 1000);
  assert.equal(retryAfterMs("120", now), 120_000);
  assert.equal(retryAfterMs("-3", now), 0);
  assert.equal(retryAfterMs("soon", now), 0);
  assert.equal(retryAfterMs("Fri, 14 Mar 2031 15:09:36 GMT", now), 10_000);
  assert.equal(retryAfterMs("Fri, 14 Mar 2031 15:09:16 GMT", now), 0);
});

test("the constructor refuses what cannot work", () => {
  for (const [baseUrl, apiKey] of [["", "k"], ["127.0.0.1:8080", "k"], ["ftp://x", "k"], ["http://x?y=1", "k"], ["http://x", ""]]) {
    assert.throws(() => new Client({ baseUrl, apiKey }), TypeError, `${baseUrl} ${apiKey}`);
  }
});
