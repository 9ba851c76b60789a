"""Real traffic for the upgrade fixture (make-fixture.sh): every kind of
request that stores a card-bearing body or a fingerprint, recorded with its
answer and, at the end, the answer a replay of it gives."""
import json, sys, time, urllib.request, urllib.error

base, key, merchant, out = sys.argv[1:5]

def call(method, path, body=None, idem=None):
    data = None if body is None else body.encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("X-API-Key", key)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    if idem:
        req.add_header("Idempotency-Key", idem)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)

billing = {"email": "ada@example.com", "phone": "+44 20 7946 0000", "country": "GB",
           "address": "1 Analytical St", "city": "London", "postalCode": "N1 1AA"}

def payment(number, cvv, **extra):
    b = {"amount": "10.50", "currency": "EUR", "customerId": "customer-42",
         "card": {"number": number, "expiryMonth": "12", "expiryYear": "30",
                  "cvv": cvv, "holderName": "Ada Lovelace"},
         "billing": billing}
    b.update(extra)
    return json.dumps(b)

requests = []
def record(kind, method, path, body, idem, pan=None, cvv=None):
    status, text, _ = call(method, path, body, idem)
    requests.append({"kind": kind, "method": method, "path": path, "body": body,
                     "idempotencyKey": idem, "pan": pan, "cvv": cvv,
                     "status": status, "answer": text})
    return status, text

record("customer", "POST", "/v1/customers",
       json.dumps({"externalId": "customer-42", "email": "ada@example.com"}), "cust-1")
cards = [("4242424242424242", "123"), ("5555555555554444", "321"), ("378282246310005", "1234"),
         ("4000000000000002", "456"), ("4000000000000077", "789"), ("4000000000005126", "135"),
         ("4000000000003220", "246"), ("4000000000000705", "357"), ("4000000000009995", "468")]
ids = {}
for i, (pan, cvv) in enumerate(cards):
    extra = {"merchantRef": "order-%d" % i, "metadata": {"n": str(i)}}
    if pan == "4242424242424242":
        extra["saveCard"] = True
    status, text = record("payment", "POST", "/v1/payments", payment(pan, cvv, **extra), "pay-%d" % i, pan, cvv)
    try:
        ids[pan] = json.loads(text)["data"]["id"]
    except Exception:
        ids[pan] = json.loads(text)["error"].get("transactionId")

cust = json.loads(requests[0]["answer"])["data"]["id"]
record("stored_card", "POST", "/v1/customers/%s/cards" % cust,
       json.dumps({"card": {"number": "6011111111111117", "expiryMonth": "11", "expiryYear": "29",
                            "holderName": "Ada Lovelace"}}), "card-1", "6011111111111117")
record("refund", "POST", "/v1/refunds",
       json.dumps({"transactionId": ids["4242424242424242"], "amount": "4.00", "currency": "EUR",
                   "reason": "damaged"}), "refund-1")
record("refund", "POST", "/v1/refunds",
       json.dumps({"transactionId": ids["4000000000005126"], "amount": "10.50", "currency": "EUR"}), "refund-2")
record("capture", "POST", "/v1/payments/%s/capture" % ids["4000000000000077"], "{}", "capture-1")

# Let recovery settle the unknown outcome (0705) and the refunds finish.
deadline = time.time() + 30
while time.time() < deadline:
    s, t, _ = call("GET", "/v1/payments/%s" % ids["4000000000000705"])
    if json.loads(t)["data"]["status"] != "created":
        break
    time.sleep(0.5)
time.sleep(3)

for r in requests:
    s, t, h = call(r["method"], r["path"], r["body"], r["idempotencyKey"])
    r["replayStatus"], r["replayAnswer"] = s, t
    r["replayed"] = h.get("Idempotent-Replayed") == "true"

json.dump({"merchantId": merchant, "testSecretKey": key, "requests": requests},
          open(out, "w"), indent=1)
print("recorded %d requests" % len(requests))
