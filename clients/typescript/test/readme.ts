// The README's example, type-checked against dist/ by dist.test.mjs (the
// package imports itself by name, as a merchant's code would).
import { Client, ErrorName, PaygateError } from "@paygate/client";

const paygate = new Client({ baseUrl: "http://127.0.0.1:8080", apiKey: process.env.PAYGATE_KEY! });
try {
  const payment = await paygate.createPayment({
    amount: "10.50", currency: "EUR", customerId: "customer-42", merchantRef: "order-1001",
    card: { number: "4242424242424242", expiryMonth: "12", expiryYear: "30", cvv: "123", holderName: "Ada Lovelace" },
    billing: { email: "ada@example.com", phone: "+44 20 7946 0000", country: "GB", address: "1 Analytical St", city: "London", postalCode: "N1 1AA" },
  }, { idempotencyKey: "order-1001" }); // retried with this key: never charged twice
  console.log(payment.id, payment.status);
} catch (err) {
  if (err instanceof PaygateError && err.name === ErrorName.CardDeclined) console.log("declined:", err.declineCode);
  else throw err; // a TransportError: unknown whether charged; retry later with the same key
}
