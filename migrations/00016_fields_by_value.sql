-- The field index held once (docs/architecture.md "The
-- SQLite backend"): migration 00015 keyed fields by (doc, field, kind, value) and
-- kept fields_fkv (field, kind, value, doc) for queries, the same rows
-- twice. Queries are the only readers that need speed, and they look rows
-- up by field and value, so the table is now keyed that way and there is
-- no second copy. The two readers by document read differently: a RefBy
-- predicate reads the referring document's field from the document itself
-- (one document), and an evict deletes its documents' rows in one pass
-- over the table (an evict is rare, and must leave nothing behind).

-- +goose Up
CREATE TABLE fields_new (
    field TEXT NOT NULL,
    kind  TEXT NOT NULL,
    value ANY NOT NULL,
    doc   INTEGER NOT NULL,
    PRIMARY KEY (field, kind, value, doc)
) WITHOUT ROWID;
INSERT OR IGNORE INTO fields_new (field, kind, value, doc) SELECT field, kind, value, doc FROM fields;
DROP TABLE fields;
ALTER TABLE fields_new RENAME TO fields;

-- +goose Down
CREATE TABLE fields_old (
    doc   INTEGER NOT NULL,
    field TEXT NOT NULL,
    kind  TEXT NOT NULL,
    value ANY NOT NULL,
    PRIMARY KEY (doc, field, kind, value)
) WITHOUT ROWID;
INSERT OR IGNORE INTO fields_old (doc, field, kind, value) SELECT doc, field, kind, value FROM fields;
DROP TABLE fields;
ALTER TABLE fields_old RENAME TO fields;
CREATE INDEX fields_fkv ON fields (field, kind, value);
