// Conformance scenarios through the official Node SDK (@azure/cosmos, pinned in
// package.json) against cdb-emulator. Run by emulator/conformance's Go test,
// which passes COSMOS_ENDPOINT, COSMOS_KEY and NODE_EXTRA_CA_CERTS. Prints one
// JSON line per scenario: {"scenario": name, "ok": bool, "error": text}.
"use strict";
const assert = require("node:assert/strict");
const https = require("node:https");
const { CosmosClient, ChangeFeedStartFrom, BulkOperationType } = require("@azure/cosmos");

const endpoint = process.env.COSMOS_ENDPOINT;
const key = process.env.COSMOS_KEY;
const client = new CosmosClient({ endpoint, key });
const dbId = "conformance";
const scenarios = [];
function scenario(name, fn) {
  scenarios.push({ name, fn });
}

let seq = 0;
async function freshContainer(def = {}) {
  const { database } = await client.databases.createIfNotExists({ id: dbId });
  const id = `c${++seq}`;
  const { container } = await database.containers.create({
    id,
    partitionKey: { paths: ["/pk"], version: 2 },
    ...def,
  });
  return container;
}

async function expectError(p, status, substatus) {
  try {
    await p;
  } catch (e) {
    assert.equal(e.code, status, `status: ${e.code} ${e.message}`);
    if (substatus !== undefined) assert.equal(e.substatus, substatus, `substatus of ${e.message}`);
    return e;
  }
  assert.fail(`expected ${status}, got success`);
}

scenario("crud", async () => {
  const c = await freshContainer();
  const { resource: created, statusCode } = await c.items.create({ id: "a", pk: "p", n: 1 });
  assert.equal(statusCode, 201);
  assert.equal(created.n, 1);
  const { resource: read } = await c.item("a", "p").read();
  assert.equal(read.n, 1);
  await c.item("a", "p").replace({ id: "a", pk: "p", n: 2 });
  const { resource: up, statusCode: upStatus } = await c.items.upsert({ id: "b", pk: "p", n: 3 });
  assert.equal(upStatus, 201);
  assert.equal(up.n, 3);
  await expectError(c.items.create({ id: "a", pk: "p" }), 409);
  const { statusCode: del } = await c.item("a", "p").delete();
  assert.equal(del, 204);
  const { resource: gone, statusCode: missing } = await c.item("a", "p").read();
  assert.equal(missing, 404);
  assert.equal(gone, undefined);
});

scenario("etags", async () => {
  const c = await freshContainer();
  const { resource: v1, etag } = await c.items.create({ id: "a", pk: "p", n: 1 });
  assert.ok(etag && etag === v1._etag, "etag header equals _etag");
  const { etag: etag2 } = await c.item("a", "p").replace({ id: "a", pk: "p", n: 2 }, { accessCondition: { type: "IfMatch", condition: etag } });
  assert.notEqual(etag2, etag);
  await expectError(c.item("a", "p").replace({ id: "a", pk: "p", n: 3 }, { accessCondition: { type: "IfMatch", condition: etag } }), 412);
  const { statusCode } = await c.item("a", "p").read({ accessCondition: { type: "IfNoneMatch", condition: etag2 } });
  assert.equal(statusCode, 304);
  await expectError(c.item("a", "p").delete({ accessCondition: { type: "IfMatch", condition: etag } }), 412);
});

scenario("patch", async () => {
  const c = await freshContainer();
  await c.items.create({ id: "a", pk: "p", n: 1, arr: [1], o: { x: 1 } });
  const { resource } = await c.item("a", "p").patch([
    { op: "add", path: "/s", value: "v" },
    { op: "set", path: "/o/y", value: 2 },
    { op: "replace", path: "/n", value: 5 },
    { op: "incr", path: "/n", value: 2 },
    { op: "add", path: "/arr/-", value: 2 },
    { op: "remove", path: "/o/x" },
  ]);
  assert.equal(resource.n, 7);
  assert.deepEqual(resource.arr, [1, 2]);
  assert.deepEqual(resource.o, { y: 2 });
  const { resource: r2 } = await c.item("a", "p").patch({ condition: "from c where c.n = 7", operations: [{ op: "set", path: "/t", value: true }] });
  assert.equal(r2.t, true);
  await expectError(c.item("a", "p").patch({ condition: "from c where c.n = 0", operations: [{ op: "set", path: "/t", value: false }] }), 412);
});

scenario("batch", async () => {
  const c = await freshContainer();
  await c.items.create({ id: "x", pk: "p", n: 0 });
  const { result } = await c.items.batch(
    [
      { operationType: "Create", resourceBody: { id: "a", pk: "p" } },
      { operationType: "Upsert", resourceBody: { id: "b", pk: "p" } },
      { operationType: "Read", id: "x" },
      { operationType: "Patch", id: "x", resourceBody: { operations: [{ op: "incr", path: "/n", value: 1 }] } },
      { operationType: "Delete", id: "b" },
    ],
    "p",
  );
  assert.deepEqual(result.map((r) => r.statusCode), [201, 201, 200, 200, 204]);
  const { result: failed } = await c.items.batch(
    [
      { operationType: "Create", resourceBody: { id: "c", pk: "p" } },
      { operationType: "Create", resourceBody: { id: "a", pk: "p" } },
    ],
    "p",
  );
  assert.deepEqual(failed.map((r) => r.statusCode), [424, 409]);
  const { statusCode } = await c.item("c", "p").read();
  assert.equal(statusCode, 404, "a failed batch applies nothing");
});

scenario("query-paging", async () => {
  const c = await freshContainer();
  for (let i = 0; i < 7; i++) await c.items.create({ id: `i${i}`, pk: i % 2 ? "odd" : "even", n: i });
  // Single partition, pages of 2.
  const it = c.items.query({ query: "SELECT * FROM c WHERE c.n >= @n", parameters: [{ name: "@n", value: 0 }] }, { partitionKey: "even", maxItemCount: 2 });
  const seen = [];
  let pages = 0;
  while (it.hasMoreResults()) {
    const { resources } = await it.fetchNext();
    pages++;
    seen.push(...resources.map((r) => r.n));
  }
  assert.deepEqual(seen.sort(), [0, 2, 4, 6]);
  assert.ok(pages >= 2, `paged: ${pages} pages`);
  // Cross partition, pages of 3.
  const all = [];
  const cross = c.items.query("SELECT c.n FROM c", { maxItemCount: 3 });
  while (cross.hasMoreResults()) {
    const { resources } = await cross.fetchNext();
    all.push(...resources.map((r) => r.n));
  }
  assert.deepEqual(all.sort(), [0, 1, 2, 3, 4, 5, 6]);
});

scenario("change-feed", async () => {
  const c = await freshContainer();
  await c.items.create({ id: "a", pk: "p", n: 1 });
  await c.items.create({ id: "b", pk: "q", n: 1 });
  const it = c.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(), maxItemCount: 10 });
  const ids = [];
  let res;
  for (let i = 0; i < 10; i++) {
    res = await it.readNext();
    if (res.statusCode === 304) break;
    ids.push(...res.result.map((d) => d.id));
  }
  assert.deepEqual(ids.sort(), ["a", "b"]);
  const token = res.continuationToken;
  assert.ok(token, "continuation token");
  await c.item("a", "p").replace({ id: "a", pk: "p", n: 2 });
  const it2 = c.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Continuation(token) });
  const after = [];
  for (let i = 0; i < 10; i++) {
    const r = await it2.readNext();
    if (r.statusCode === 304) break;
    after.push(...r.result.map((d) => `${d.id}:${d.n}`));
  }
  assert.deepEqual(after, ["a:2"], "resumes after the continuation, not from the start");
});

// rawRequest sends one request signed with the master key, outside the SDK:
// method on path (a resource link under the endpoint), signed for
// resourceType and resourceLink, with headers and an optional JSON body. It
// resolves to the status, the header names as sent, and the body text.
async function rawRequest(method, path, resourceType, resourceLink, headers, body) {
  const u = new URL(endpoint);
  const date = new Date().toUTCString();
  const crypto = require("node:crypto");
  const text = `${method.toLowerCase()}\n${resourceType}\n${resourceLink}\n${date.toLowerCase()}\n\n`;
  const sig = crypto.createHmac("sha256", Buffer.from(key, "base64")).update(text).digest("base64");
  const auth = encodeURIComponent(`type=master&ver=1.0&sig=${sig}`);
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: u.hostname, port: u.port, path: `/${path}`, method, headers: { authorization: auth, "x-ms-date": date, "x-ms-version": "2020-07-15", ...headers } },
      (res) => {
        const chunks = [];
        res.on("data", (d) => chunks.push(d));
        res.on("end", () => resolve({ status: res.statusCode, names: res.rawHeaders.filter((_, i) => i % 2 === 0), body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

// Class 1: the service sends header names in lower case.
scenario("headers-lower-case", async () => {
  const c = await freshContainer();
  await c.items.create({ id: "a", pk: "p" });
  const link = `dbs/${dbId}/colls/${c.id}/docs/a`;
  const raw = await rawRequest("GET", link, "docs", link, { "x-ms-documentdb-partitionkey": '["p"]' });
  assert.equal(raw.status, 200);
  const cosmos = raw.names.filter((n) => /^x-ms-|^etag$|^lsn$/i.test(n));
  assert.ok(cosmos.length >= 4, `cosmos headers: ${raw.names}`);
  for (const n of cosmos) assert.equal(n, n.toLowerCase(), `header ${n} is not lower case`);
  assert.ok(raw.names.includes("etag"), `etag header: ${raw.names}`);
});

// Class 9: substatus 1003 for a missing container.
scenario("substatus-missing-container", async () => {
  const { database } = await client.databases.createIfNotExists({ id: dbId });
  const e = await expectError(database.container("nope").item("a", "p").read().then((r) => {
    if (r.statusCode === 404) {
      const err = new Error("404");
      err.code = 404;
      err.substatus = r.substatus ?? Number(r.headers["x-ms-substatus"]);
      throw err;
    }
    return r;
  }), 404);
  assert.equal(e.substatus, 1003);
});

// Class 3: time to live.
scenario("ttl", async () => {
  const c = await freshContainer({ defaultTtl: 1 });
  await c.items.create({ id: "short", pk: "p" });
  await c.items.create({ id: "never", pk: "p", ttl: -1 });
  const off = await freshContainer();
  await off.items.create({ id: "ignored", pk: "p", ttl: 1 });
  const { resource: def } = await c.read();
  assert.equal(def.defaultTtl, 1);
  await new Promise((r) => setTimeout(r, 2100)); // past _ts + 1 s whatever the second boundary
  const { statusCode } = await c.item("short", "p").read();
  assert.equal(statusCode, 404, "expired item is gone from reads");
  const { resources } = await c.items.query("SELECT VALUE c.id FROM c").fetchAll();
  assert.deepEqual(resources, ["never"], "and from queries");
  const it = c.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() });
  const feed = [];
  for (let i = 0; i < 5; i++) {
    const r = await it.readNext();
    if (r.statusCode === 304) break;
    feed.push(...r.result.map((d) => d.id));
  }
  assert.deepEqual(feed, ["never"], "and from the change feed");
  const { statusCode: kept } = await off.item("ignored", "p").read();
  assert.equal(kept, 200, "an item's ttl is ignored without defaultTtl");
  await expectError(freshContainer({ defaultTtl: 0 }), 400);
});

// Class 4: unique keys.
scenario("unique-keys", async () => {
  const c = await freshContainer({ uniqueKeyPolicy: { uniqueKeys: [{ paths: ["/email"] }] } });
  await c.items.create({ id: "a", pk: "p", email: "x@y" });
  await expectError(c.items.create({ id: "b", pk: "p", email: "x@y" }), 409);
  await c.items.create({ id: "b", pk: "q", email: "x@y" });
  await expectError(c.items.upsert({ id: "c", pk: "q", email: "x@y" }), 409);
  const { resource } = await c.read();
  assert.deepEqual(resource.uniqueKeyPolicy.uniqueKeys[0].paths, ["/email"]);
});

// Class 5: bulk, the SDK's non-atomic batches (a partition key per operation).
scenario("bulk-non-atomic", async () => {
  const c = await freshContainer();
  await c.items.create({ id: "dup", pk: "p1" });
  const ops = [];
  for (let i = 0; i < 20; i++) ops.push({ operationType: BulkOperationType.Create, partitionKey: `p${i % 5}`, resourceBody: { id: `b${i}`, pk: `p${i % 5}` } });
  ops.push({ operationType: BulkOperationType.Create, partitionKey: "p1", resourceBody: { id: "dup", pk: "p1" } });
  ops.push({ operationType: BulkOperationType.Upsert, partitionKey: "p2", resourceBody: { id: "u", pk: "p2", n: 1 } });
  ops.push({ operationType: BulkOperationType.Patch, id: "b0", partitionKey: "p0", resourceBody: { operations: [{ op: "add", path: "/x", value: 1 }] } });
  ops.push({ operationType: BulkOperationType.Read, id: "b1", partitionKey: "p1" });
  ops.push({ operationType: BulkOperationType.Delete, id: "b2", partitionKey: "p2" });
  const res = await c.items.executeBulkOperations(ops);
  const codes = res.map((r) => r.response?.statusCode ?? r.error?.code);
  assert.deepEqual(codes.slice(0, 20), new Array(20).fill(201));
  assert.deepEqual(codes.slice(20), [409, 201, 200, 200, 204], `codes ${codes}`);
  const { resource } = await c.item("b0", "p0").read();
  assert.equal(resource.x, 1, "the failed create did not undo the others");
});

// Class 7: item ids as the routing gateway treats them. (@azure/cosmos itself
// refuses ids with '/', '\\', '?', '#' or a trailing space before sending;
// the emulator's Go tests cover those through azcosmos.)
scenario("item-ids", async () => {
  const c = await freshContainer();
  await expectError(c.items.create({ id: "x".repeat(1024), pk: "p" }), 400);
  await c.items.create({ id: "é".repeat(511) + "x", pk: "p" }); // 1,023 bytes
  for (const [id, status] of [["With space", 200], ["pct%20x", 401], ["With\tTab", 400]]) {
    const { statusCode } = await c.items.create({ id, pk: "p" });
    assert.equal(statusCode, 201, `create ${JSON.stringify(id)}`);
    let got;
    try {
      got = (await c.item(id, "p").read()).statusCode;
    } catch (e) {
      got = e.code;
    }
    assert.equal(got, status, `read ${JSON.stringify(id)}`);
    const { resources } = await c.items.query({ query: "SELECT VALUE c.id FROM c WHERE c.id = @id", parameters: [{ name: "@id", value: id }] }, { partitionKey: "p" }).fetchAll();
    assert.deepEqual(resources, [id], `query ${JSON.stringify(id)}`);
  }
});

// Class 2: cross-partition queries that need the gateway's query plan (ORDER BY,
// TOP, OFFSET LIMIT, DISTINCT, GROUP BY, aggregates), which the SDK runs per
// partition key range and merges on its side.
scenario("query-plan", async () => {
  const c = await freshContainer();
  const colors = ["red", "green", "blue"];
  for (let i = 0; i < 9; i++) await c.items.create({ id: `i${i}`, pk: `p${i}`, n: i, color: colors[i % 3] });
  const q = async (text) => (await c.items.query(text).fetchAll()).resources;
  assert.deepEqual((await q("SELECT VALUE c.n FROM c ORDER BY c.n DESC")), [8, 7, 6, 5, 4, 3, 2, 1, 0]);
  assert.deepEqual((await q("SELECT c.id FROM c WHERE c.n >= 3 ORDER BY c.n")).map((r) => r.id), ["i3", "i4", "i5", "i6", "i7", "i8"]);
  assert.deepEqual((await q("SELECT TOP 2 c.n FROM c ORDER BY c.n DESC")).map((r) => r.n), [8, 7]);
  assert.deepEqual((await q("SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 2 LIMIT 3")), [2, 3, 4]);
  assert.equal((await q("SELECT * FROM c OFFSET 1 LIMIT 4")).length, 4);
  assert.equal((await q("SELECT TOP 5 * FROM c")).length, 5);
  assert.deepEqual((await q("SELECT DISTINCT VALUE c.color FROM c")).sort(), ["blue", "green", "red"]);
  assert.deepEqual((await q("SELECT DISTINCT c.color FROM c ORDER BY c.color")).map((r) => r.color), ["blue", "green", "red"]);
  assert.deepEqual(await q("SELECT VALUE COUNT(1) FROM c"), [9]);
  assert.deepEqual(await q("SELECT VALUE SUM(c.n) FROM c"), [36]);
  assert.deepEqual(await q("SELECT VALUE MIN(c.n) FROM c"), [0]);
  assert.deepEqual(await q("SELECT VALUE MAX(c.n) FROM c"), [8]);
  assert.deepEqual(await q("SELECT VALUE AVG(c.n) FROM c"), [4]);
  assert.deepEqual(await q("SELECT COUNT(1) AS n, MAX(c.n) AS hi FROM c WHERE c.color = 'red'"), [{ n: 3, hi: 6 }]);
  const groups = await q("SELECT c.color, COUNT(1) AS n, SUM(c.n) AS s FROM c GROUP BY c.color");
  assert.deepEqual(groups.sort((a, b) => a.color.localeCompare(b.color)), [
    { color: "blue", n: 3, s: 15 },
    { color: "green", n: 3, s: 12 },
    { color: "red", n: 3, s: 9 },
  ]);
  // Paging through an ORDER BY across partitions keeps the order.
  const it = c.items.query("SELECT VALUE c.n FROM c ORDER BY c.n", { maxItemCount: 2 });
  const paged = [];
  while (it.hasMoreResults()) paged.push(...(await it.fetchNext()).resources);
  assert.deepEqual(paged, [0, 1, 2, 3, 4, 5, 6, 7, 8]);
});

// Query shapes across partitions through each of @azure/cosmos's paths: the
// default (the query first, the plan on a 400/1004), forceQueryPlan, and
// enableQueryControl (4.10: the plan first, even for simple queries, and
// SDK-composite continuation tokens that resume an ORDER BY with a rewritten
// filter and the range's own continuation).
scenario("query-shapes", async () => {
  const c = await freshContainer();
  const colors = ["red", "green", "blue"];
  for (let i = 0; i < 12; i++) await c.items.create({ id: `i${i}`, pk: `p${i}`, n: i, color: colors[i % 3] });
  const sortNum = (a) => [...a].sort((x, y) => x - y);
  const shapes = [
    ["SELECT * FROM c", (r) => assert.deepEqual(sortNum(r.map((d) => d.n)), [...Array(12).keys()])],
    ["SELECT c.id, c.n FROM c WHERE c.n >= 6", (r) => assert.deepEqual(sortNum(r.map((d) => d.n)), [6, 7, 8, 9, 10, 11])],
    [{ query: "SELECT VALUE c.n FROM c WHERE c.color = @c", parameters: [{ name: "@c", value: "red" }] }, (r) => assert.deepEqual(sortNum(r), [0, 3, 6, 9])],
    ["SELECT VALUE c.n FROM c ORDER BY c.n DESC", (r) => assert.deepEqual(r, [11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0])],
    ["SELECT c.n FROM c WHERE c.n > 2 ORDER BY c.n", (r) => assert.deepEqual(r.map((d) => d.n), [3, 4, 5, 6, 7, 8, 9, 10, 11])],
    ["SELECT TOP 3 * FROM c", (r) => assert.equal(r.length, 3)],
    ["SELECT TOP 3 VALUE c.n FROM c ORDER BY c.n", (r) => assert.deepEqual(r, [0, 1, 2])],
    ["SELECT DISTINCT VALUE c.color FROM c", (r) => assert.deepEqual([...r].sort(), ["blue", "green", "red"])],
    ["SELECT VALUE COUNT(1) FROM c", (r) => assert.deepEqual(r, [12])],
    ["SELECT VALUE MAX(c.n) FROM c", (r) => assert.deepEqual(r, [11])],
    ["SELECT VALUE MIN(c.n) FROM c WHERE c.n > 4", (r) => assert.deepEqual(r, [5])],
    ["SELECT VALUE SUM(c.n) FROM c", (r) => assert.deepEqual(r, [66])],
    ["SELECT VALUE AVG(c.n) FROM c", (r) => assert.deepEqual(r, [5.5])],
    ["SELECT c.color, COUNT(1) AS k, MAX(c.n) AS hi FROM c GROUP BY c.color", (r) =>
      assert.deepEqual([...r].sort((a, b) => a.color.localeCompare(b.color)), [
        { color: "blue", k: 4, hi: 11 }, { color: "green", k: 4, hi: 10 }, { color: "red", k: 4, hi: 9 }])],
    ["SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 3 LIMIT 4", (r) => assert.deepEqual(r, [3, 4, 5, 6])],
    ["SELECT * FROM c OFFSET 2 LIMIT 5", (r) => assert.equal(r.length, 5)],
  ];
  for (const mode of [{}, { forceQueryPlan: true }, { enableQueryControl: true }]) {
    for (const [q, check] of shapes) {
      const what = `${JSON.stringify(q)} with ${JSON.stringify(mode)}`;
      try {
        check((await c.items.query(q, { ...mode }).fetchAll()).resources);
        // Page by page, in one iterator.
        const it = c.items.query(q, { ...mode, maxItemCount: 2 });
        const paged = [];
        // (A page of a GROUP BY still being merged has no resources.)
        while (it.hasMoreResults()) paged.push(...((await it.fetchNext()).resources ?? []));
        check(paged);
      } catch (e) {
        e.message = `${what}: ${e.message}`;
        throw e;
      }
    }
    // Resuming from continuation tokens in a new iterator each page: the
    // gateway's own token for a plain query; with enableQueryControl the
    // SDK's composite tokens, ORDER BY included. (Without query control
    // the SDK gives no token for a cross-partition ORDER BY.)
    const all = [...Array(12).keys()];
    const resumable = mode.enableQueryControl
      ? [
          ["SELECT VALUE c.n FROM c", all, true],
          ["SELECT VALUE c.n FROM c ORDER BY c.n", all],
          ["SELECT VALUE c.n FROM c WHERE c.n > 2 ORDER BY c.n DESC", [11, 10, 9, 8, 7, 6, 5, 4, 3]],
          // (Not ordered DISTINCT: resumed by @azure/cosmos 4.10.1's tokens
          // it repeats a value across two ranges here, a difference not yet
          // checked against the service; the emulator's resume after the
          // last sort keys is a Go test.)
        ]
      : mode.forceQueryPlan ? [] : [["SELECT VALUE c.n FROM c", all, true]];
    for (const [q, want, unordered] of resumable) {
      const got = [];
      let token;
      for (let i = 0; i < 20; i++) {
        const r = await c.items.query(q, { ...mode, maxItemCount: 2, continuationToken: token }).fetchNext();
        got.push(...(r.resources ?? []));
        token = r.continuationToken;
        if (!token) break;
      }
      assert.deepEqual(unordered ? sortNum(got) : got, want, `${q} resumed by tokens with ${JSON.stringify(mode)}`);
    }
  }
});

// Issue 25: the query plan as @azure/cosmos 4.10.1 reads it, and every path
// of the SDK that asks for one. The plan of each shape carries every field
// of the service's plan (the SDK reads queryInfo.aggregates.length
// unguarded; its typings declare groupByAliasToAggregateType, distinctType,
// hasSelectValue and hasNonStreamingOrderBy non-optional; the service sends
// dCountInfo null); each shape runs through fetchAll, fetchNext and the async
// iterator, with and without a partition key and with the options that
// change the SDK's path; the other feeds the SDK reads (readAll, databases,
// containers, offers) answer; a query the emulator cannot plan says so.
scenario("query-plan-fields-and-paths", async () => {
  const c = await freshContainer();
  const colors = ["red", "green", "blue"];
  const docs = [];
  for (let i = 0; i < 12; i++) {
    const d = { id: `i${i}`, pk: `p${i % 4}`, n: i, color: colors[i % 3] };
    docs.push(d);
    await c.items.create(d);
  }
  const shapes = [
    ["SELECT * FROM c", (ds) => ds.map((d) => d.n), (r) => r.map((d) => d.n), true],
    [{ query: "SELECT VALUE c.n FROM c WHERE c.n > @n", parameters: [{ name: "@n", value: 2 }] }, (ds) => ds.filter((d) => d.n > 2).map((d) => d.n), (r) => r, true],
    ["SELECT VALUE COUNT(1) FROM c", (ds) => [ds.length], (r) => r],
    ["SELECT TOP 2 VALUE c.n FROM c ORDER BY c.n DESC", (ds) => ds.map((d) => d.n).sort((a, b) => b - a).slice(0, 2), (r) => r],
    ["SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 1 LIMIT 2", (ds) => ds.map((d) => d.n).sort((a, b) => a - b).slice(1, 3), (r) => r],
    ["SELECT DISTINCT VALUE c.color FROM c", (ds) => [...new Set(ds.map((d) => d.color))], (r) => r, true],
    ["SELECT c.color, COUNT(1) AS k FROM c GROUP BY c.color", (ds) => [...new Set(ds.map((d) => d.color))].map((col) => `${col}:${ds.filter((d) => d.color === col).length}`), (r) => r.map((x) => `${x.color}:${x.k}`), true],
  ];
  const arrays = ["orderBy", "orderByExpressions", "groupByExpressions", "groupByAliases", "aggregates"];
  for (const [q] of shapes) {
    const spec = typeof q === "string" ? { query: q, parameters: [] } : q;
    const coll = `dbs/${dbId}/colls/${c.id}`;
    const res = await rawRequest("POST", `${coll}/docs`, "docs", coll, {
      "content-type": "application/query+json",
      "x-ms-documentdb-isquery": "True",
      "x-ms-cosmos-is-query-plan-request": "True",
      "x-ms-cosmos-query-version": "1.4",
      "x-ms-cosmos-supported-query-features": "NonValueAggregate,Aggregate,Distinct,MultipleOrderBy,OffsetAndLimit,OrderBy,Top,CompositeAggregate,GroupBy,MultipleAggregates,NonStreamingOrderBy",
    }, JSON.stringify(spec));
    assert.equal(res.status, 200, `plan of ${spec.query}: ${res.body}`);
    const plan = JSON.parse(res.body);
    assert.equal(plan.partitionedQueryExecutionInfoVersion, 2);
    assert.ok(Array.isArray(plan.queryRanges) && plan.queryRanges.length > 0, `queryRanges of ${spec.query}`);
    const info = plan.queryInfo;
    assert.ok(info && typeof info === "object", `queryInfo of ${spec.query}`);
    for (const k of ["distinctType", "top", "offset", "limit", "orderBy", "orderByExpressions", "groupByExpressions", "groupByAliases",
      "aggregates", "groupByAliasToAggregateType", "rewrittenQuery", "hasSelectValue", "dCountInfo", "hasNonStreamingOrderBy"]) {
      assert.ok(k in info, `${spec.query}: queryInfo.${k} is missing: ${res.body}`);
    }
    for (const k of arrays) assert.ok(Array.isArray(info[k]), `${spec.query}: queryInfo.${k} is not an array: ${res.body}`);
    assert.equal(typeof info.groupByAliasToAggregateType, "object");
    assert.ok(["None", "Ordered", "Unordered"].includes(info.distinctType), `${spec.query}: distinctType ${info.distinctType}`);
    assert.equal(info.dCountInfo, null);
  }

  const modes = [{}, { partitionKey: "p1" }, { maxItemCount: 2 }, { bufferItems: true }, { maxDegreeOfParallelism: 2 },
    { populateQueryMetrics: true }, { enableQueryControl: true, partitionKey: "p1" }];
  // (Not forceQueryPlan with a partition key: @azure/cosmos 4.10.1 then runs
  // the plan on every range without the partition key header, and says so in
  // its source.)
  const sorted = (a) => [...a].sort((x, y) => (String(x) < String(y) ? -1 : String(x) > String(y) ? 1 : 0));
  for (const mode of modes) {
    const ds = mode.partitionKey ? docs.filter((d) => d.pk === mode.partitionKey) : docs;
    for (const [q, want, pick, unordered] of shapes) {
      const what = `${JSON.stringify(q)} with ${JSON.stringify(mode)}`;
      const check = (rows, how) => {
        const got = pick(rows);
        assert.deepEqual(unordered ? sorted(got) : got, unordered ? sorted(want(ds)) : want(ds), `${what} by ${how}`);
      };
      try {
        check((await c.items.query(q, { ...mode }).fetchAll()).resources, "fetchAll");
        const it = c.items.query(q, { ...mode });
        const paged = [];
        for (let i = 0; it.hasMoreResults() && i < 50; i++) paged.push(...((await it.fetchNext()).resources ?? []));
        check(paged, "fetchNext");
        const iterated = [];
        for await (const page of c.items.query(q, { ...mode }).getAsyncIterator()) iterated.push(...(page.resources ?? []));
        check(iterated, "getAsyncIterator");
      } catch (e) {
        e.message = `${what}: ${e.message}`;
        throw e;
      }
    }
  }

  const { resources: all } = await c.items.readAll().fetchAll();
  assert.equal(all.length, docs.length);
  const { resources: p1 } = await c.items.readAll({ partitionKey: "p1" }).fetchAll();
  assert.deepEqual(p1.map((d) => d.n).sort((a, b) => a - b), [1, 5, 9]);
  const { database } = await client.databases.createIfNotExists({ id: dbId });
  const { resources: dbs } = await client.databases.query({ query: "SELECT * FROM root r WHERE r.id = @id", parameters: [{ name: "@id", value: dbId }] }).fetchAll();
  assert.deepEqual(dbs.map((d) => d.id), [dbId]);
  const { resources: colls } = await database.containers.query({ query: "SELECT * FROM root r WHERE r.id = @id", parameters: [{ name: "@id", value: c.id }] }).fetchAll();
  assert.deepEqual(colls.map((x) => x.id), [c.id]);
  assert.ok(Array.isArray((await client.offers.readAll().fetchAll()).resources));

  const e = await expectError(c.items.query("SELECT c.color, COUNT(1) AS k FROM c GROUP BY c.color ORDER BY c.color").fetchAll(), 400);
  assert.match(e.message, /does not plan cross-partition queries with ORDER BY with GROUP BY/);
});

// Class 8: feed ranges on the change feed (the SDK reads each range by its partition
// key range and, for a sub-range, x-ms-start-epk / x-ms-end-epk), and hierarchical
// partition keys with prefix queries. (@azure/cosmos 4.10.1 has no feed range option
// for queries; the emulator's Go tests cover queries scoped by EPK headers.)
scenario("feed-ranges-and-hierarchical-keys", async () => {
  const c = await freshContainer();
  for (let i = 0; i < 12; i++) await c.items.create({ id: `i${i}`, pk: `p${i}`, n: i });
  const ranges = await c.getFeedRanges();
  assert.ok(ranges.length >= 2, `feed ranges: ${ranges.length}`);
  const fromFeed = [];
  for (const range of ranges) {
    const it = c.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(range) });
    for (let i = 0; i < 10; i++) {
      const r = await it.readNext();
      if (r.statusCode === 304) break;
      fromFeed.push(...r.result.map((d) => d.n));
    }
  }
  const all = [...Array(12).keys()];
  assert.deepEqual(fromFeed.sort((a, b) => a - b), all, "every document once across the ranges' change feeds");

  const { database } = await client.databases.createIfNotExists({ id: dbId });
  const { container: h } = await database.containers.create({
    id: `h${++seq}`,
    partitionKey: { paths: ["/tenant", "/user"], kind: "MultiHash", version: 2 },
  });
  await h.items.create({ id: "a", tenant: "t1", user: "u1" });
  await h.items.create({ id: "b", tenant: "t1", user: "u2" });
  await h.items.create({ id: "c", tenant: "t2", user: "u1" });
  const { resource: read } = await h.item("b", ["t1", "u2"]).read();
  assert.equal(read.id, "b");
  const { resources: prefix } = await h.items.query("SELECT VALUE c.id FROM c", { partitionKey: ["t1"] }).fetchAll();
  assert.deepEqual(prefix.sort(), ["a", "b"], "a prefix of the hierarchical key selects its sub-partitions");
});

// Class 9: server-side scripts are stored and read back; a missing one is a
// 404 (read or executed), as on the service; executing one that exists is
// refused with 501, as the emulator runs no JavaScript.
scenario("scripts", async () => {
  const c = await freshContainer();
  await expectError(c.scripts.storedProcedure("missing").read(), 404);
  await expectError(c.scripts.storedProcedure("missing").execute("p", []), 404);
  await expectError(c.scripts.trigger("missing").read(), 404);
  await expectError(c.scripts.userDefinedFunction("missing").read(), 404);
  const { resource: sp, statusCode } = await c.scripts.storedProcedures.create({ id: "sp", body: "function () {}" });
  assert.equal(statusCode, 201);
  assert.equal(sp.body, "function () {}");
  const { resource: read } = await c.scripts.storedProcedure("sp").read();
  assert.equal(read._etag, sp._etag);
  const { resources: all } = await c.scripts.storedProcedures.readAll().fetchAll();
  assert.deepEqual(all.map((x) => x.id), ["sp"]);
  await c.scripts.triggers.create({ id: "tr", body: "function () {}", triggerOperation: "All", triggerType: "Pre" });
  await c.scripts.userDefinedFunctions.create({ id: "f", body: "function () {}" });
  const e = await expectError(c.scripts.storedProcedure("sp").execute("p", []), 501);
  assert.match(e.message, /does not implement the execution of stored procedures/);
  await c.scripts.storedProcedure("sp").delete();
  await expectError(c.scripts.storedProcedure("sp").read(), 404);
});

// Session scenarios run against an emulator whose account is at Session
// consistency with secondaries that never catch up during the run
// (COSMOS_CONSISTENCY=Session, set by the Go test): a client built with
// consistencyLevel "Session" keeps the session tokens of its writes and
// reads them back from a replica that has them; a client without it sends
// none and is served by any replica. Run only when COSMOS_CONSISTENCY says
// so, as the other scenarios read their own writes without tokens.
const sessionAccount = process.env.COSMOS_CONSISTENCY === "Session";

scenario("session-read-your-writes", async () => {
  const sessionClient = new CosmosClient({ endpoint, key, consistencyLevel: "Session" });
  const { database } = await sessionClient.databases.createIfNotExists({ id: dbId });
  const { container: c } = await database.containers.create({ id: `s${++seq}`, partitionKey: { paths: ["/pk"], version: 2 } });
  const { headers } = await c.items.create({ id: "a", pk: "p", n: 1 });
  assert.match(headers["x-ms-session-token"], /^[0-9]+:-1#[0-9]+$/);
  for (let i = 0; i < 20; i++) {
    const { resource, statusCode } = await c.item("a", "p").read();
    assert.equal(statusCode, 200, `read ${i} after the create`);
    assert.equal(resource.n, 1);
  }
  await c.item("a", "p").replace({ id: "a", pk: "p", n: 2 });
  for (let i = 0; i < 20; i++) {
    const { resources } = await c.items.query("SELECT * FROM c", { partitionKey: "p" }).fetchAll();
    assert.deepEqual(resources.map((d) => d.n), [2], `query ${i} after the replace`);
  }
  // A second client has no token: most replicas have not applied the
  // writes (each of 40 reads goes to one of them with probability 3/4).
  const other = new CosmosClient({ endpoint, key }).database(dbId).container(c.id);
  let stale = 0;
  for (let i = 0; i < 40; i++) {
    const { resource, statusCode } = await other.item("a", "p").read();
    if (statusCode === 404 || (resource && resource.n !== 2)) stale++;
  }
  assert.ok(stale > 0, "a client without the session token never saw a lagging replica");
});

(async () => {
  const only = process.argv[2];
  for (const { name, fn } of scenarios) {
    if (only && name !== only) continue;
    if (!only && name.startsWith("session-") !== sessionAccount) continue;
    let line;
    try {
      await fn();
      line = { scenario: name, ok: true };
    } catch (e) {
      line = { scenario: name, ok: false, error: e && e.stack ? String(e.stack) : JSON.stringify(e) };
    }
    process.stdout.write(JSON.stringify(line) + "\n");
  }
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
