// A card token made with the public key (createToken), paid with once.

import assert from "node:assert/strict";
import { test } from "node:test";
import { Client, ErrorName, PaygateError } from "../dist/index.js";
import { payment, startGateway, testCard } from "./harness.mjs";

test("createToken and a payment with the token", async (t) => {
  const g = await startGateway(t);
  const c = new Client({ baseUrl: g.url, apiKey: g.merchant.testSecretKey });
  const tok = await c.createToken(g.merchant.testPublicKey, testCard("4242424242424242"));
  assert.match(tok.id, /^tok_/);
  assert.equal(tok.card.brand, "visa");
  assert.equal(tok.card.last4, "4242");
  assert.equal(tok.used, false);

  const pay = (ref) => {
    const p = payment("", ref);
    delete p.card;
    return c.createPayment({ ...p, paymentMethod: "token", token: tok.id });
  };
  const res = await pay("order-token-1");
  assert.equal(res.status, "captured");
  await assert.rejects(pay("order-token-2"), (err) => err instanceof PaygateError && err.name === ErrorName.InvalidRequest && err.param === "token");

  // The secret key does not tokenize.
  await assert.rejects(
    c.createToken(g.merchant.testSecretKey, testCard("4242424242424242")),
    (err) => err instanceof PaygateError && err.name === ErrorName.Unauthorized,
  );
});
