// The AWS SDK for JavaScript v3 adapter of ddb/clients_test.go
// (TestClients/sdk-js-v3), using @aws-sdk/client-dynamodb from
// $PEERS_DIR/node_modules (scripts/test-deps.sh installs it).
//
// Reads one request a line on stdin, {"op", "input", "credentials": {"id",
// "secret"}} with the input in DynamoDB's wire JSON (B values in base64),
// sends the operation's Command with a DynamoDBClient at $QC_ENDPOINT, and
// writes one line: {"output": ...} or {"error": {"type", "message",
// "fields"}} (fields: the error's modeled members, e.g. Item or
// CancellationReasons), or {"fail": "..."} when the call could not be made.
// Binary values go back in base64, dates as ISO 8601 text.
"use strict";
const path = require("path");
const readline = require("readline");

const pkg = path.join(process.env.PEERS_DIR, "node_modules", "@aws-sdk", "client-dynamodb");
const ddb = require(pkg);
const version = require(path.join(pkg, "package.json")).version;

const clients = new Map();
function client(creds) {
  const key = creds.id + "\0" + creds.secret;
  if (!clients.has(key)) {
    clients.set(key, new ddb.DynamoDBClient({
      endpoint: process.env.QC_ENDPOINT,
      region: process.env.QC_REGION || "us-east-1",
      credentials: { accessKeyId: creds.id, secretAccessKey: creds.secret },
      maxAttempts: 1,
    }));
  }
  return clients.get(key);
}

// toSDK turns wire JSON into the SDK's input: B and BS values become bytes.
function toSDK(v) {
  if (Array.isArray(v)) return v.map(toSDK);
  if (v !== null && typeof v === "object") {
    const keys = Object.keys(v);
    if (keys.length === 1) {
      const x = v[keys[0]];
      if (keys[0] === "B" && typeof x === "string") return { B: Buffer.from(x, "base64") };
      if (keys[0] === "BS" && Array.isArray(x) && x.every((e) => typeof e === "string")) {
        return { BS: x.map((e) => Buffer.from(e, "base64")) };
      }
    }
    const out = {};
    for (const k of keys) out[k] = toSDK(v[k]);
    return out;
  }
  return v;
}

// toWire turns the SDK's output back into wire JSON.
function toWire(v) {
  if (v instanceof Uint8Array) return Buffer.from(v).toString("base64");
  if (v instanceof Date) return v.toISOString();
  if (v instanceof Set) return [...v].map(toWire);
  if (Array.isArray(v)) return v.map(toWire);
  if (v !== null && typeof v === "object") {
    const out = {};
    for (const [k, x] of Object.entries(v)) {
      if (k === "$metadata" || x === undefined) continue;
      out[k] = toWire(x);
    }
    return out;
  }
  return v;
}

async function call(req) {
  const Command = ddb[req.op + "Command"];
  if (!Command) return { fail: "no command " + req.op };
  try {
    const out = await client(req.credentials).send(new Command(toSDK(req.input)));
    return { output: toWire(out) };
  } catch (e) {
    if (!e || !e.$metadata || typeof e.name !== "string" || e.$fault === undefined) {
      return { fail: String(e && e.stack ? e.stack : e) };
    }
    const fields = {};
    for (const [k, x] of Object.entries(e)) {
      if (/^[A-Z]/.test(k) && k !== "Message") fields[k] = toWire(x);
    }
    return { error: { type: e.name, message: e.message, fields } };
  }
}

async function main() {
  console.log(JSON.stringify({ ready: "@aws-sdk/client-dynamodb " + version + ", node " + process.version }));
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (!line.trim()) continue;
    let res;
    try {
      res = await call(JSON.parse(line));
    } catch (e) {
      res = { fail: String(e && e.stack ? e.stack : e) };
    }
    process.stdout.write(JSON.stringify(res) + "\n");
  }
}
main();
