-- The PostgreSQL store: the same tables as the SQLite store's (points
-- naming documents stored once per content hash, a transaction table, a
-- search layer), in PostgreSQL's types. Entity ids are bytea, so they
-- order bytewise (the portable query's tie-break) and may hold any
-- character, U+0000 included, which text refuses. Times are milliseconds
-- since the Unix epoch, as in the SQLite store.

-- +goose Up
-- Marks the database (or schema) as a ctxstore store: Open refuses one
-- that has tables but not this mark.
CREATE TABLE ctxstore_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
INSERT INTO ctxstore_meta (key, value) VALUES ('application', 'ctxstore');

-- The transaction clock: one row, locked by every writing transaction
-- first (SELECT ... FOR UPDATE) and updated in it. Writers are
-- serialized on it, so tx ids are handed out in commit order, with no
-- gap (a transaction that rolls back leaves the row as it was), and tx
-- times never go back.
CREATE TABLE tx_clock (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    tx_id   bigint NOT NULL,
    tx_time bigint NOT NULL
);
INSERT INTO tx_clock (one, tx_id, tx_time) VALUES (true, -1, 0);

-- Every transaction, committed or aborted by a failed match. ops is the
-- JSON of its ops, documents named by content hash.
CREATE TABLE txs (
    tx_id     bigint PRIMARY KEY,
    tx_time   bigint NOT NULL,
    committed boolean NOT NULL,
    ops       text NOT NULL
);
CREATE INDEX txs_time ON txs (tx_time, tx_id);

-- Documents, once per content hash (the SHA-256 of the canonical JSON,
-- which holds the id, so a document belongs to one entity). body is the
-- canonical JSON, given back byte for byte; doc is the same document as
-- jsonb for queries (a string holding U+0000, which jsonb refuses, holds
-- U+FFFD there).
CREATE TABLE docs (
    id   bigserial PRIMARY KEY,
    hash bytea NOT NULL UNIQUE,
    ent  bytea NOT NULL,
    body text NOT NULL,
    doc  jsonb NOT NULL
);
CREATE INDEX docs_ent ON docs (ent, id);
CREATE INDEX docs_doc ON docs USING gin (doc jsonb_path_ops);

-- Points: at valid time vt, as of transaction tx_id, entity ent is the
-- document doc, or absent (doc NULL: a tombstone).
CREATE TABLE points (
    ent     bytea NOT NULL,
    vt      bigint NOT NULL,
    tx_id   bigint NOT NULL,
    tx_time bigint NOT NULL,
    doc     bigint REFERENCES docs (id),
    PRIMARY KEY (ent, vt, tx_id)
);
CREATE INDEX points_doc ON points (doc);
CREATE INDEX points_tx ON points (ent, tx_id);

-- Full-text search (docs/recall.md): the searchable text of each stored
-- version, one unit per chat turn, written by the store in the writing
-- transaction; an evict removes them with the documents.
CREATE TABLE search_units (
    id      bigserial PRIMARY KEY,
    doc     bigint NOT NULL REFERENCES docs (id) ON DELETE CASCADE,
    ent     bytea NOT NULL,
    kind    text NOT NULL,
    session text,
    part    integer NOT NULL,
    title   text NOT NULL,
    body    text NOT NULL,
    tsv     tsvector NOT NULL
);
CREATE INDEX search_units_tsv ON search_units USING gin (tsv);
CREATE INDEX search_units_doc ON search_units (doc);

-- The values of a field that the portable query compares: the value, or
-- each element of an array.
-- +goose StatementBegin
CREATE FUNCTION ctxs_vals(v jsonb) RETURNS SETOF jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT e FROM jsonb_array_elements(CASE WHEN jsonb_typeof(v) = 'array' THEN v ELSE jsonb_build_array(v) END) AS e
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION ctxs_vals(jsonb);
DROP TABLE search_units;
DROP TABLE points;
DROP TABLE docs;
DROP TABLE txs;
DROP TABLE tx_clock;
DROP TABLE ctxstore_meta;
