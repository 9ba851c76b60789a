// dist/ is committed so that the package works straight from the
// repository (npm install path/to/clients/typescript); this test fails when
// it is not what the sources compile to. Fix: npm run build.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const pkg = resolve(dirname(fileURLToPath(import.meta.url)), "..");

test("dist/ is the build of src/", async (t) => {
  const out = await mkdtemp(join(tmpdir(), "paygate-ts-dist-"));
  t.after(() => rm(out, { recursive: true, force: true }));
  await promisify(execFile)(process.execPath, [join(pkg, "node_modules/typescript/bin/tsc"), "-p", pkg, "--outDir", out], { cwd: pkg });
  const built = (await readdir(out)).sort();
  const committed = (await readdir(join(pkg, "dist"))).sort();
  assert.deepEqual(committed, built, "the files of dist/; run npm run build");
  for (const f of built) {
    const want = await readFile(join(out, f), "utf8");
    assert.equal(await readFile(join(pkg, "dist", f), "utf8"), want, `dist/${f} is stale; run npm run build`);
  }
});

test("the README's example type-checks against dist/", async () => {
  await promisify(execFile)(process.execPath, [join(pkg, "node_modules/typescript/bin/tsc"), "-p", join(pkg, "test")], { cwd: pkg }).catch((err) => {
    assert.fail(`tsc -p test: ${err.stdout}${err.stderr}`);
  });
});
