-- The bitemporal index of XTDB 1.x, as tables. Times are milliseconds since
-- the Unix epoch (UTC). See docs/architecture.md.

-- +goose Up
-- Marks the file as a ctxstore store ("ctxs"), atomically with the schema.
PRAGMA application_id = 1668577395;

CREATE TABLE ctxstore_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

-- One row per transaction, committed or aborted. ops is the JSON of the ops
-- as submitted, with documents replaced by their content hash.
CREATE TABLE txs (
    tx_id     INTEGER PRIMARY KEY,
    tx_time   INTEGER NOT NULL,
    committed INTEGER NOT NULL,
    ops       TEXT NOT NULL
);
CREATE INDEX txs_time ON txs (tx_time, tx_id);

-- Documents, once per content hash (SHA-256 of RFC 8785 canonical JSON).
-- Documents, once per content hash (SHA-256 of RFC 8785 canonical JSON).
-- A rowid table: rows are large and arrive in no useful key order.
CREATE TABLE docs (
    id   INTEGER PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE,
    eid  TEXT NOT NULL,
    doc  TEXT NOT NULL
);
CREATE INDEX docs_eid ON docs (eid);

-- Points: (entity, valid time, tx) naming a document hash; NULL hash is a
-- tombstone. tx_time is the writing transaction's time, or, for a version
-- restored at the end of a range, the original one's.
CREATE TABLE points (
    eid     TEXT NOT NULL,
    vt      INTEGER NOT NULL,
    tx_id   INTEGER NOT NULL,
    tx_time INTEGER NOT NULL,
    hash    TEXT,
    doc     INTEGER, -- docs.id of hash (NULL for a tombstone): reads join on it
    PRIMARY KEY (eid, vt, tx_id)
) WITHOUT ROWID;

-- Top-level scalar field values of each document (array elements one row
-- each), for the portable query. kind: 's' string, 'n' number, 'b' boolean.
CREATE TABLE fields (
    doc   INTEGER NOT NULL,
    field TEXT NOT NULL,
    kind  TEXT NOT NULL,
    value ANY NOT NULL
);
CREATE INDEX fields_fkv ON fields (field, kind, value);
CREATE INDEX fields_doc ON fields (doc);

-- +goose Down
DROP TABLE fields;
DROP TABLE points;
DROP TABLE docs;
DROP TABLE txs;
DROP TABLE ctxstore_meta;
