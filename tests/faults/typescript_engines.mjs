// Engines waiting through the TypeScript client (clients/typescript, built: dist/), for tests/faults/test_nodes.py.
//   node typescript_engines.mjs <url> <engine key>   (request ids on stdin, one a line)
// Prints one line of JSON when every wait has ended: {answers: {id: status}, errors: {id: message}, reconnects: [...]}.
import { readFileSync } from "node:fs";
import { HitlClient } from "../../clients/typescript/dist/index.js";

const [url, key] = process.argv.slice(2);
const ids = readFileSync(0, "utf8").split("\n").filter(Boolean);
const reconnects = [];
const client = new HitlClient(url, key, { timeoutMs: 60_000, log: { info: () => {}, warn: (m) => reconnects.push(m) } });
const answers = {};
const errors = {};
await Promise.all(
  ids.map(async (id) => {
    try {
      answers[id] = (await client.wait(id, 240)).status;
    } catch (error) {
      errors[id] = String(error);
    }
  }),
);
console.log(JSON.stringify({ answers, errors, reconnects }));
