"""Conformance scenarios through the Python SDK azure-cosmos 3.x (Debian's
python3-azure-cosmos 3.1.1) against cdb-emulator. Run by emulator/conformance's
Go test, which passes COSMOS_ENDPOINT, COSMOS_KEY and COSMOS_CA_CERT (the
emulator's certificate). Prints one JSON line per scenario:
{"scenario": name, "ok": bool, "error": text}.

This SDK sends a cross-partition query as is; when the gateway answers 400
with substatus 1004 it runs the query plan from the error's
additionalErrorInfo (execution_context/execution_dispatcher.py) without
declaring any supported query features."""
import json
import os
import sys
import traceback

import azure.cosmos.cosmos_client as cosmos_client
import azure.cosmos.documents as documents
import azure.cosmos.errors as errors

policy = documents.ConnectionPolicy()
policy.SSLConfiguration = documents.SSLConfiguration()
policy.SSLConfiguration.SSLCaCerts = os.environ["COSMOS_CA_CERT"]
client = cosmos_client.CosmosClient(os.environ["COSMOS_ENDPOINT"], {"masterKey": os.environ["COSMOS_KEY"]}, policy)
# Name-based links, except in the scenario "self-links", which follows the
# "_self" (resource id) links this SDK's own samples use.
DB = "dbs/conformance-py"
db = client.CreateDatabase({"id": "conformance-py"})
scenarios = []
seq = [0]


def scenario(fn):
    scenarios.append(fn)
    return fn


def fresh_container():
    seq[0] += 1
    client.CreateContainer(DB, {"id": "c%d" % seq[0], "partitionKey": {"paths": ["/pk"], "kind": "Hash"}})
    return DB + "/colls/c%d" % seq[0]


def expect_status(status, fn, *args):
    try:
        fn(*args)
    except errors.HTTPFailure as e:
        assert e.status_code == status, "status %d, want %d: %s" % (e.status_code, status, e)
        return e
    raise AssertionError("expected %d, got success" % status)


def query(coll, text):
    return list(client.QueryItems(coll, text, {"enableCrossPartitionQuery": True}))


@scenario
def crud():
    c = fresh_container()
    doc = client.CreateItem(c, {"id": "a", "pk": "p", "n": 1})
    assert doc["n"] == 1 and doc["_etag"]
    link = c + "/docs/a"
    read = client.ReadItem(link, {"partitionKey": "p"})
    assert read["n"] == 1
    client.ReplaceItem(link, {"id": "a", "pk": "p", "n": 2}, {"partitionKey": "p"})
    assert client.ReadItem(link, {"partitionKey": "p"})["n"] == 2
    expect_status(409, client.CreateItem, c, {"id": "a", "pk": "p"})
    client.DeleteItem(link, {"partitionKey": "p"})
    expect_status(404, client.ReadItem, link, {"partitionKey": "p"})


@scenario
def cross_partition_aggregates():
    c = fresh_container()
    for i in range(22):
        client.CreateItem(c, {"id": "i%d" % i, "pk": "p%d" % i, "n": i % 13})
    ns = [i % 13 for i in range(22)]
    for text, want in [
        ("SELECT VALUE MAX(c.n) FROM c", [max(ns)]),
        ("SELECT VALUE MIN(c.n) FROM c", [min(ns)]),
        ("SELECT VALUE MIN(c.n) FROM c WHERE c.n > 3", [4]),
        ("SELECT VALUE COUNT(1) FROM c", [len(ns)]),
        ("SELECT VALUE SUM(c.n) FROM c", [sum(ns)]),
        ("SELECT VALUE AVG(c.n) FROM c", [sum(ns) / float(len(ns))]),
    ]:
        got = query(c, text)
        assert got == want, "%s: %r, want %r" % (text, got, want)


@scenario
def cross_partition_order_by_and_top():
    c = fresh_container()
    for i in range(9):
        client.CreateItem(c, {"id": "i%d" % i, "pk": "p%d" % i, "n": i})
    got = [d["n"] for d in query(c, "SELECT * FROM c ORDER BY c.n DESC")]
    assert got == list(range(8, -1, -1)), got
    got = query(c, "SELECT TOP 3 VALUE c.n FROM c ORDER BY c.n")
    assert got == [0, 1, 2], got
    got = sorted(query(c, "SELECT VALUE c.n FROM c WHERE c.n >= 5"))
    assert got == [5, 6, 7, 8], got


@scenario
def missing_stored_procedure_is_not_found():
    c = fresh_container()
    link = c + "/sprocs/missing"
    expect_status(404, client.ReadStoredProcedure, link)
    expect_status(404, client.ExecuteStoredProcedure, link, [], {"partitionKey": "p"})


@scenario
def self_links():
    seq[0] += 1
    c = client.CreateContainer(db["_self"], {"id": "c%d" % seq[0], "partitionKey": {"paths": ["/pk"], "kind": "Hash"}})
    docs = [client.CreateItem(c["_self"], {"id": "i%d" % i, "pk": "p%d" % i, "n": i}) for i in range(6)]
    doc = client.ReadItem(docs[3]["_self"], {"partitionKey": "p3"})
    assert doc["id"] == "i3" and doc["_self"] == docs[3]["_self"], doc
    got = list(client.QueryItems(c["_self"], "SELECT VALUE MAX(c.n) FROM c", {"enableCrossPartitionQuery": True}))
    assert got == [5], got
    client.DeleteItem(doc["_self"], {"partitionKey": "p3"})
    expect_status(404, client.ReadItem, doc["_self"], {"partitionKey": "p3"})
    expect_status(404, client.ReadStoredProcedure, c["_self"] + "sprocs/missing/")
    assert client.ReadContainer(c["_self"])["id"] == c["id"]


# Session scenarios run against an emulator whose account is at Session
# consistency with secondaries that never catch up during the run
# (COSMOS_CONSISTENCY=Session, set by the Go test), and only there: the
# others read their own writes through clients of any level. This SDK's
# clients are at Session unless told otherwise and keep the session tokens
# of their writes.
SESSION_ACCOUNT = os.environ.get("COSMOS_CONSISTENCY") == "Session"


@scenario
def session_read_your_writes():
    c = fresh_container()
    client.CreateItem(c, {"id": "a", "pk": "p", "n": 1})
    link = c + "/docs/a"
    for i in range(20):
        assert client.ReadItem(link, {"partitionKey": "p"})["n"] == 1, "read %d after the create" % i
    client.ReplaceItem(link, {"id": "a", "pk": "p", "n": 2}, {"partitionKey": "p"})
    for i in range(20):
        got = [d["n"] for d in client.QueryItems(c, "SELECT * FROM c", {"partitionKey": "p"})]
        assert got == [2], "query %d after the replace: %r" % (i, got)
    # An Eventual client keeps no tokens: most replicas have not applied
    # the writes (each of 40 reads goes to one of them with probability 3/4).
    other = cosmos_client.CosmosClient(os.environ["COSMOS_ENDPOINT"], {"masterKey": os.environ["COSMOS_KEY"]}, policy,
                                       documents.ConsistencyLevel.Eventual)
    stale = 0
    for _ in range(40):
        try:
            if other.ReadItem(link, {"partitionKey": "p"})["n"] != 2:
                stale += 1
        except errors.HTTPFailure as e:
            assert e.status_code == 404, e
            stale += 1
    assert stale > 0, "a client without the session token never saw a lagging replica"


def main():
    only = sys.argv[1] if len(sys.argv) > 1 else None
    try:
        for fn in scenarios:
            name = fn.__name__.replace("_", "-")
            if only and name != only:
                continue
            if not only and name.startswith("session-") != SESSION_ACCOUNT:
                continue
            try:
                fn()
                line = {"scenario": name, "ok": True}
            except Exception:
                line = {"scenario": name, "ok": False, "error": traceback.format_exc()}
            sys.stdout.write(json.dumps(line) + "\n")
            sys.stdout.flush()
    finally:
        client.DeleteDatabase(DB)


main()
