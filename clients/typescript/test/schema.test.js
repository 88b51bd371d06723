// The committed types (src/schema.ts) are what openapi-typescript makes of the schema the portal serves:
// a change to the API that is not regenerated here (`npm run types` with HITL_SCHEMA=<portal>/api/schema/) fails.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { portal } from "./support.js";

const PACKAGE = fileURLToPath(new URL("..", import.meta.url));

test("src/schema.ts is what the served OpenAPI schema generates", async () => {
  const dir = await mkdtemp(join(tmpdir(), "hitl-types-"));
  try {
    const generated = join(dir, "schema.ts");
    await promisify(execFile)(join(PACKAGE, "node_modules", ".bin", "openapi-typescript"), [`${portal.url}/api/schema/`, "-o", generated], { cwd: PACKAGE });
    const committed = await readFile(join(PACKAGE, "src", "schema.ts"), "utf8");
    assert.ok(
      (await readFile(generated, "utf8")) === committed,
      "src/schema.ts differs from what the served schema generates: run `HITL_SCHEMA=<portal>/api/schema/ npm run types` in clients/typescript and commit it",
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
