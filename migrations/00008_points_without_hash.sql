-- Points name their document by docs.id only (docs/architecture.md
-- "The SQLite backend"): the content hash each point carried (64 characters,
-- a third of a point) is the hash of the docs row it names, read from
-- there; a tombstone names none. A point with a hash but no docs.id (none
-- is written since 00001) gets the id of its hash's row first.

-- +goose Up
UPDATE points SET doc = (SELECT d.id FROM docs d WHERE d.hash = points.hash)
WHERE doc IS NULL AND hash IS NOT NULL;
CREATE TABLE points_new (
    eid     TEXT NOT NULL,
    vt      INTEGER NOT NULL,
    tx_id   INTEGER NOT NULL,
    tx_time INTEGER NOT NULL,
    doc     INTEGER, -- docs.id of the version (NULL for a tombstone)
    PRIMARY KEY (eid, vt, tx_id)
) WITHOUT ROWID;
INSERT INTO points_new (eid, vt, tx_id, tx_time, doc) SELECT eid, vt, tx_id, tx_time, doc FROM points;
DROP TABLE points;
ALTER TABLE points_new RENAME TO points;

-- +goose Down
CREATE TABLE points_old (
    eid     TEXT NOT NULL,
    vt      INTEGER NOT NULL,
    tx_id   INTEGER NOT NULL,
    tx_time INTEGER NOT NULL,
    hash    TEXT,
    doc     INTEGER,
    PRIMARY KEY (eid, vt, tx_id)
) WITHOUT ROWID;
INSERT INTO points_old (eid, vt, tx_id, tx_time, hash, doc)
SELECT p.eid, p.vt, p.tx_id, p.tx_time, d.hash, p.doc FROM points p LEFT JOIN docs d ON d.id = p.doc;
DROP TABLE points;
ALTER TABLE points_old RENAME TO points;
