// The tests drive the real paygate binary: built once per test process
// (or taken from PAYGATE_BIN, as the Go test that runs these in CI sets
// it), started per test on a loopback port with a fresh SQLite database.

import { execFile, spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

let built;

/** The path of the paygate binary, built on first use unless PAYGATE_BIN names one. */
export function paygateBinary() {
  if (process.env.PAYGATE_BIN) return Promise.resolve(process.env.PAYGATE_BIN);
  built ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), "paygate-ts-"));
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
    const bin = join(dir, "paygate");
    await run("go", ["build", "-o", bin, "./cmd/paygate"], { cwd: repo, maxBuffer: 16 << 20 });
    return bin;
  })();
  return built;
}

/**
 * Starts `paygate serve` with extra flags on a fresh database with one
 * merchant; stops it when the test ends. Returns { url, dbUrl, merchant,
 * paygate(...args) } where paygate runs a --json command on the database.
 */
export async function startGateway(t, ...flags) {
  const bin = await paygateBinary();
  const dir = await mkdtemp(join(tmpdir(), "paygate-ts-db-"));
  const dbUrl = "sqlite:" + join(dir, "paygate.db");
  const paygate = async (...args) => {
    const { stdout } = await run(bin, [...args, "--database-url", dbUrl], { timeout: 60_000 });
    return JSON.parse(stdout);
  };
  const merchant = await paygate("merchant", "create", "--name", "TypeScript client tests", "--json");

  const child = spawn(bin, ["serve", "--addr", "127.0.0.1:0", "--database-url", dbUrl, ...flags], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const logs = [];
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("paygate serve did not listen within 60s")), 60_000);
    createInterface({ input: child.stderr }).on("line", (line) => {
      logs.push(line);
      try {
        const rec = JSON.parse(line);
        if (rec.msg === "listening") {
          clearTimeout(timer);
          resolve("http://" + rec.addr);
        }
      } catch {
        // not a JSON log line
      }
    });
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`paygate serve exited (${code}) before listening:\n${logs.join("\n")}`));
    });
  });
  t.after(async () => {
    child.kill("SIGTERM");
    let timer;
    const stopped = await Promise.race([exited.then(() => true), new Promise((r) => (timer = setTimeout(() => r(false), 45_000)))]);
    clearTimeout(timer);
    if (!stopped) {
      child.kill("SIGKILL");
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  });
  return { url, dbUrl, merchant, paygate, logs };
}

/** A card of the sandbox's table with a future expiry. */
export function testCard(number) {
  return {
    number,
    expiryMonth: "12",
    expiryYear: String((new Date().getUTCFullYear() + 3) % 100).padStart(2, "0"),
    cvv: "123",
    holderName: "Ada Lovelace",
  };
}

/** A valid card payment of 10.50 EUR with the card number. */
export function payment(number, merchantRef) {
  return {
    amount: "10.50",
    currency: "EUR",
    customerId: "customer-42",
    card: testCard(number),
    billing: {
      email: "ada@example.com",
      phone: "+44 20 7946 0000",
      country: "GB",
      address: "1 Analytical St",
      city: "London",
      postalCode: "N1 1AA",
    },
    merchantRef,
    metadata: { orderId: merchantRef },
  };
}
