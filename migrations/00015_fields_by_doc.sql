-- The field index without a rowid (docs/architecture.md "The
-- SQLite backend"): fields was a table of rows (doc, field, kind, value) with two
-- indexes, fields_fkv (field, kind, value) for queries and fields_doc
-- (doc) for an evict, so each row was stored three times in part. Now the
-- table is keyed by (doc, field, kind, value), which an evict reads by doc,
-- and fields_fkv, which holds the key's doc as well, answers a query
-- without reading the table. The same row twice (an array holding the
-- same value twice) is kept once: the index answers whether a document has
-- a value, not how often.

-- +goose Up
CREATE TABLE fields_new (
    doc   INTEGER NOT NULL,
    field TEXT NOT NULL,
    kind  TEXT NOT NULL,
    value ANY NOT NULL,
    PRIMARY KEY (doc, field, kind, value)
) WITHOUT ROWID;
INSERT OR IGNORE INTO fields_new (doc, field, kind, value) SELECT doc, field, kind, value FROM fields;
DROP TABLE fields;
ALTER TABLE fields_new RENAME TO fields;
CREATE INDEX fields_fkv ON fields (field, kind, value);

-- +goose Down
CREATE TABLE fields_old (
    doc   INTEGER NOT NULL,
    field TEXT NOT NULL,
    kind  TEXT NOT NULL,
    value ANY NOT NULL
);
INSERT INTO fields_old (doc, field, kind, value) SELECT doc, field, kind, value FROM fields;
DROP TABLE fields;
ALTER TABLE fields_old RENAME TO fields;
CREATE INDEX fields_fkv ON fields (field, kind, value);
CREATE INDEX fields_doc ON fields (doc);
