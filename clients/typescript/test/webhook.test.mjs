// verifyWebhook against a real delivery of the gateway, and against
// deliveries signed here the Standard Webhooks way.

import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import { test } from "node:test";
import { Client, EventType, verifyWebhook, WebhookVerificationError } from "../dist/index.js";
import { payment, startGateway } from "./harness.mjs";

test("a real delivery verifies; a changed body or another secret does not", async (t) => {
  const deliveries = [];
  let arrived;
  const first = new Promise((resolve) => (arrived = resolve));
  const receiver = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    deliveries.push({ headers: req.headers, body: Buffer.concat(chunks) });
    res.writeHead(204).end();
    arrived();
  });
  await new Promise((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    receiver.closeAllConnections();
    return new Promise((resolve) => receiver.close(resolve));
  });

  const g = await startGateway(t);
  const { secret } = await g.paygate(
    "webhook", "set", "--merchant", g.merchant.merchantId, "--mode", "test",
    "--url", `http://127.0.0.1:${receiver.address().port}/hooks`, "--json",
  );
  const res = await new Client({ baseUrl: g.url, apiKey: g.merchant.testSecretKey }).createPayment(payment("4242424242424242", "order-wh"));
  let timer;
  await Promise.race([first, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("no webhook within 30s")), 30_000)))]);
  clearTimeout(timer);

  const d = deliveries[0];
  const ev = verifyWebhook(secret, d.headers, d.body);
  assert.equal(ev.event, EventType.PaymentCaptured);
  assert.equal(ev.id, d.headers["webhook-id"]);
  assert.equal(ev.mode, "test");
  assert.equal(ev.data.transactionId, res.id);
  assert.equal(ev.data.amount, 1050);
  assert.equal(ev.data.currency, "EUR");
  // fetch's Headers and a string body work as well.
  assert.equal(verifyWebhook(secret, new Headers(Object.entries(d.headers)), d.body.toString()).id, ev.id);

  const changed = d.body.toString().replace("1050", "9050");
  assert.throws(() => verifyWebhook(secret, d.headers, changed), { reason: "no_matching_signature" });
  assert.throws(() => verifyWebhook("whsec_c2VjcmV0LW9mLWFub3RoZXItZW5kcG9pbnQ=", d.headers, d.body), WebhookVerificationError);
});

/** Signs body as the gateway does. */
function sign(secret, id, ts, body) {
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  return "v1," + createHmac("sha256", key).update(`${id}.${ts}.${body}`).digest("base64");
}

test("what verifyWebhook refuses", () => {
  const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const body = JSON.stringify({ id: "evt-1", event: "ping", mode: "test", timestamp: "2031-03-14T15:09:26.535Z", data: { merchantId: "m" } });
  const now = new Date("2031-03-14T15:09:26Z");
  const ts = String(Math.floor(now.getTime() / 1000));
  const headers = { "webhook-id": "evt-1", "webhook-timestamp": ts, "webhook-signature": sign(secret, "evt-1", ts, body) };

  assert.equal(verifyWebhook(secret, headers, body, now).event, "ping");
  // Two signatures during a rotation: either proves the request; other versions are ignored.
  const rotated = { ...headers, "webhook-signature": `v1a,xyz v1,${Buffer.alloc(32).toString("base64")} ${headers["webhook-signature"]}` };
  assert.equal(verifyWebhook(secret, rotated, body, now).id, "evt-1");
  // Header names in any case.
  assert.equal(verifyWebhook(secret, { "Webhook-Id": "evt-1", "Webhook-Timestamp": ts, "Webhook-Signature": headers["webhook-signature"] }, body, now).id, "evt-1");

  const refused = [
    ["invalid_secret", "not-base64!", headers, now],
    ["missing_header", secret, { ...headers, "webhook-id": undefined }, now],
    ["missing_header", secret, { ...headers, "webhook-signature": "" }, now],
    ["invalid_timestamp", secret, { ...headers, "webhook-timestamp": "soon" }, now],
    ["invalid_timestamp", secret, headers, new Date(now.getTime() + 301_000)],
    ["invalid_timestamp", secret, headers, new Date(now.getTime() - 301_000)],
    ["no_matching_signature", secret, { ...headers, "webhook-id": "evt-2" }, now],
    ["no_matching_signature", "whsec_" + Buffer.from("another").toString("base64"), headers, now],
  ];
  for (const [reason, s, h, at] of refused) {
    assert.throws(() => verifyWebhook(s, h, body, at), (err) => err instanceof WebhookVerificationError && err.reason === reason, reason);
  }
  assert.equal(verifyWebhook(secret, headers, body, new Date(now.getTime() + 299_000)).id, "evt-1", "within the tolerance");
});
