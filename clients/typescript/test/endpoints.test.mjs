// Every endpoint once against the real gateway, as a merchant backend would
// call it, and the typed errors it answers with.

import assert from "node:assert/strict";
import { test } from "node:test";
import { Client, DeclineCode, ErrorName, PaygateError } from "../dist/index.js";
import { payment, startGateway, testCard } from "./harness.mjs";

test("every endpoint", async (t) => {
  const g = await startGateway(t);
  const c = new Client({ baseUrl: g.url, apiKey: g.merchant.testSecretKey });

  // Customers: an upsert keeps the id and createdAt.
  const cust = await c.upsertCustomer({ externalId: "customer-42", email: "ada@example.com", metadata: { tier: "gold" } });
  const again = await c.upsertCustomer({ externalId: "customer-42", metadata: { tier: "platinum" } });
  assert.equal(again.id, cust.id);
  assert.equal(again.createdAt, cust.createdAt);
  assert.equal(again.email, "ada@example.com");
  assert.deepEqual(again.metadata, { tier: "platinum" });
  assert.equal((await c.getCustomer(cust.id)).externalId, "customer-42");

  // A captured payment, found by id and by reference.
  let info;
  const res = await c.createPayment(payment("4242424242424242", "order-1"), { onResponse: (i) => (info = i) });
  assert.equal(res.status, "captured");
  assert.equal(res.amount, "10.50");
  assert.equal(res.provider, "sandbox-eu");
  assert.equal(res.threeDsRequired, false);
  assert.equal(res.threeDsData, null);
  assert.equal(info.status, 201);
  assert.equal(info.attempts, 1);
  assert.equal(info.replayed, false);
  assert.match(info.idempotencyKey, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.ok(info.requestId);
  assert.equal(info.rateLimit.limit, 100);

  const p = await c.getPayment(res.id);
  assert.equal(p.status, "captured");
  assert.equal(p.customerId, cust.id);
  assert.equal(p.providerId, "sandbox-eu");
  assert.equal(p.merchantRef, "order-1");
  assert.equal(p.amountCaptured, "10.50");
  assert.equal(p.amountRefunded, "0.00");
  assert.equal(p.declineCode, null);
  assert.equal((await c.lookupPayment("order-1")).id, res.id);

  // Refunds.
  const rf = await c.createRefund({ transactionId: res.id, amount: "4", currency: "EUR", reason: "damaged" });
  assert.equal(rf.status, "created");
  assert.equal(rf.amount, "4");
  assert.equal(rf.reason, "damaged");
  assert.equal((await c.getRefund(rf.id)).transactionId, res.id);
  assert.deepEqual((await c.listPaymentRefunds(res.id)).map((r) => r.id), [rf.id]);
  await assert.rejects(c.createRefund({ transactionId: res.id, amount: "7", currency: "EUR" }), {
    name: ErrorName.InvalidRequest,
    param: "amount",
    status: 400,
  });

  // Authorized payments: one captured in part, one voided.
  const auth = await c.createPayment(payment("4000000000000077", "order-2"));
  assert.equal(auth.status, "authorized");
  const captured = await c.capturePayment(auth.id, { amount: "6.00" });
  assert.equal(captured.status, "captured");
  assert.equal(captured.amountCaptured, "6.00");
  const auth2 = await c.createPayment(payment("4000000000000077", "order-3"));
  assert.equal((await c.voidPayment(auth2.id)).status, "voided");
  await assert.rejects(c.capturePayment(auth2.id), { name: ErrorName.InvalidRequest });

  // Stored cards: save, list, pay with, delete.
  const { cvv: _, ...card } = testCard("5555555555554444");
  const stored = await c.saveCard(cust.id, card);
  assert.equal(stored.brand, "mastercard");
  assert.equal(stored.last4, "4444");
  assert.deepEqual((await c.listCards(cust.id)).map((s) => s.id), [stored.id]);
  const sp = await c.createPayment({
    amount: "3.00",
    currency: "EUR",
    customerId: "customer-42",
    paymentMethod: "stored_card",
    storedCardId: stored.id,
    billing: payment("", "").billing,
  });
  assert.equal(sp.status, "captured");
  await c.deleteCard(cust.id, stored.id);
  await assert.rejects(c.deleteCard(cust.id, stored.id), { name: ErrorName.NotFound, status: 404 });
  assert.deepEqual(await c.listCards(cust.id), []);

  // Not found, an unknown key, an empty id.
  await assert.rejects(c.getPayment("0190b6a2-7c1d-7000-8000-000000000001"), (err) => {
    assert.ok(err instanceof PaygateError);
    assert.equal(err.name, ErrorName.NotFound);
    assert.ok(err.requestId);
    return true;
  });
  const bad = new Client({ baseUrl: g.url, apiKey: "smtgw_sk_test_notakeyatallnotakeyatallnotakeyat" });
  await assert.rejects(bad.getPayment(res.id), { name: ErrorName.Unauthorized, status: 401 });
  await assert.rejects(c.getPayment(""), TypeError);
});

test("idempotency keys: given ones replay, generated ones are one per call", async (t) => {
  const g = await startGateway(t);
  const c = new Client({ baseUrl: g.url, apiKey: g.merchant.testSecretKey });
  const infos = [];
  const onResponse = (i) => infos.push(i);
  const a = await c.createPayment(payment("4242424242424242", "order-7"), { idempotencyKey: "order-7", onResponse });
  const b = await c.createPayment(payment("4242424242424242", "order-7"), { idempotencyKey: "order-7", onResponse });
  assert.equal(a.id, b.id);
  assert.deepEqual(infos.map((i) => [i.replayed, i.idempotencyKey]), [[false, "order-7"], [true, "order-7"]]);

  // The same key with another body: refused at once, not retried.
  await assert.rejects(
    c.createPayment({ ...payment("4242424242424242", "order-7"), amount: "11.00" }, { idempotencyKey: "order-7", onResponse }),
    { name: ErrorName.DuplicateRequest, status: 409, idempotencyKey: "order-7" },
  );
  assert.equal(infos[2].attempts, 1);

  // No key given: two calls are two payments.
  const p1 = await c.createPayment(payment("4242424242424242", "order-8"), { onResponse });
  const p2 = await c.createPayment(payment("4242424242424242", "order-8"), { onResponse });
  assert.notEqual(p1.id, p2.id);
  assert.notEqual(infos[3].idempotencyKey, infos[4].idempotencyKey);
});

test("typed errors: a decline, a provider failure, a validation error", async (t) => {
  const g = await startGateway(t);
  const c = new Client({ baseUrl: g.url, apiKey: g.merchant.testSecretKey });

  let info;
  const declined = await c.createPayment(payment("4000000000009995", "order-d"), { onResponse: (i) => (info = i) }).then(
    () => assert.fail("a declined card was charged"),
    (err) => err,
  );
  assert.ok(declined instanceof PaygateError);
  assert.equal(declined.name, ErrorName.CardDeclined);
  assert.equal(declined.status, 400);
  assert.equal(declined.declineCode, DeclineCode.InsufficientFunds);
  assert.ok(declined.transactionId);
  assert.ok(declined.requestId);
  assert.equal(info.attempts, 1);
  assert.ok(!String(declined.message + declined.stack).includes("4000000000009995"));
  const failed = await c.getPayment(declined.transactionId);
  assert.equal(failed.status, "failed");
  assert.equal(failed.errorCode, ErrorName.CardDeclined);
  assert.equal(failed.declineCode, DeclineCode.InsufficientFunds);

  await assert.rejects(c.createPayment(payment("4000000000000119", "order-p")), (err) => {
    assert.equal(err.name, ErrorName.ProviderError);
    assert.equal(err.status, 502);
    assert.ok(err.transactionId);
    return true;
  });
  await assert.rejects(c.createPayment(payment("4242424242424241", "order-v")), (err) => {
    assert.equal(err.name, ErrorName.InvalidRequest);
    assert.equal(err.param, "card.number");
    assert.ok(!err.message.includes("4242424242424241"));
    return true;
  });
});
