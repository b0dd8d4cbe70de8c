-- Entity ids interned (docs/architecture.md "The SQLite backend"): an
-- entity id was stored as its text in every point, every docs row and its
-- index, and every search unit; session ids make it 40-90 bytes, and a
-- session's store names a few hundred entities thousands of times. Now the
-- table ents holds each id once, with an integer the other tables name
-- (points.ent, docs.ent, search_units.ent), and is found by a 32-bit hash
-- of the id (ctxs_idhash, index ents_h; the id is compared too, so a
-- collision is only one more row read): an index on the id itself would
-- be a second copy of it (bitemporal/ents.go). A write adds its entity's
-- row first; an evict removes it with the entity's last rows. The
-- search view and triggers are those of 00011 with the integer. The same
-- rebuild of docs replaces the unique index on the 32-byte hash (a second
-- copy of it) with one on its first 8 bytes, docs_hash: a lookup compares
-- the whole hash as well, and a write stores a hash only if no row holds
-- it. Down writes the text back and the unique hash again.

-- +goose Up
CREATE TABLE ents (
    id  INTEGER PRIMARY KEY,
    eid TEXT NOT NULL,
    h   INTEGER NOT NULL -- ctxs_idhash(eid), a 32-bit hash: ents_h finds an id by it
);
INSERT INTO ents (eid, h) SELECT eid, ctxs_idhash(eid) FROM (SELECT eid FROM points UNION SELECT eid FROM docs UNION SELECT eid FROM search_units);
CREATE INDEX ents_h ON ents (h);
DROP TRIGGER search_docs_ai;
DROP TRIGGER search_docs_chat_ai;
DROP TRIGGER search_docs_bd;
DROP TRIGGER search_docs_turn_ai;
DROP VIEW search_src;

CREATE TABLE points_new (
    ent     INTEGER NOT NULL, -- ents.id
    vt      INTEGER NOT NULL,
    tx_id   INTEGER NOT NULL,
    tx_time INTEGER NOT NULL,
    doc     INTEGER, -- docs.id of the version (NULL for a tombstone)
    PRIMARY KEY (ent, vt, tx_id)
) WITHOUT ROWID;
INSERT INTO points_new (ent, vt, tx_id, tx_time, doc)
SELECT e.id, p.vt, p.tx_id, p.tx_time, p.doc FROM points p JOIN ents e ON e.h = ctxs_idhash(p.eid) AND e.eid = p.eid;
DROP TABLE points;
ALTER TABLE points_new RENAME TO points;

CREATE TABLE docs_new (
    id   INTEGER PRIMARY KEY,
    hash TEXT NOT NULL, -- unique: a write looks it up first (docs_hash)
    ent  INTEGER NOT NULL, -- ents.id
    doc  TEXT NOT NULL,
    base INTEGER -- docs.id of the row a packDelta row is against
);
INSERT INTO docs_new (id, hash, ent, doc, base)
SELECT d.id, d.hash, e.id, d.doc, d.base FROM docs d JOIN ents e ON e.h = ctxs_idhash(d.eid) AND e.eid = d.eid;
DROP TABLE docs;
ALTER TABLE docs_new RENAME TO docs;
CREATE INDEX docs_ent ON docs (ent);
CREATE INDEX docs_hash ON docs (substr(hash, 1, 8));

CREATE TABLE search_units_new (
    id      INTEGER PRIMARY KEY,
    doc     INTEGER NOT NULL, -- docs.id of the version the text is from
    ent     INTEGER NOT NULL, -- ents.id
    kind    TEXT NOT NULL,
    session TEXT,             -- the session the object belongs to, if any
    part    INTEGER NOT NULL, -- a chat's turn index; -1 for a whole document
    title   TEXT NOT NULL,    -- path, title, tool and args, nickname, tags
    turn    TEXT NOT NULL     -- content, or a turn's user and assistant text
);
INSERT INTO search_units_new (id, doc, ent, kind, session, part, title, turn)
SELECT u.id, u.doc, e.id, u.kind, u.session, u.part, u.title, u.turn FROM search_units u JOIN ents e ON e.h = ctxs_idhash(u.eid) AND e.eid = u.eid;
DROP TABLE search_units;
ALTER TABLE search_units_new RENAME TO search_units;
CREATE INDEX search_units_doc ON search_units (doc);

CREATE VIEW search_src (id, title, body) AS
SELECT u.id, u.title,
       CASE WHEN u.part >= 0 THEN u.turn
            ELSE coalesce(CASE WHEN json_type(ctxs_doc(d.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = d.base)), '$.content') = 'text' THEN json_extract(ctxs_doc(d.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = d.base)), '$.content') END,
                          json_extract(ctxs_doc(d.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = d.base)), '$.summary'), '') END
FROM search_units u JOIN docs d ON d.id = u.doc;

-- +goose StatementBegin
CREATE TRIGGER search_docs_ai AFTER INSERT ON docs
WHEN json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.type') IN ('file', 'toolcall', 'note', 'user', 'system_prompt', 'session_meta')
BEGIN
    INSERT INTO search_units (doc, ent, kind, session, part, title, turn)
    VALUES (
        new.id, new.ent, json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.type'),
        CASE WHEN json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.chat_ref') LIKE 'chat:%'
             THEN substr(json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.chat_ref'), 6)
             ELSE json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.session_id') END,
        -1,
        concat_ws(' ',
            json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.source.path'), json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.title'),
            json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.name'), json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.tool'),
            CASE WHEN json_type(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.args_display') = 'text' THEN json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.args_display')
                 WHEN json_type(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.args') = 'object' THEN json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.args') END,
            json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.nickname'), json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.description'),
            (SELECT group_concat(t.value, ' ') FROM json_each(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.tags') t WHERE t.type = 'text')),
        ''
    );
    INSERT INTO search_fts (rowid, title, body)
    SELECT id, title, coalesce(CASE WHEN json_type(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.content') = 'text' THEN json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.content') END,
                               json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.summary'), '')
    FROM search_units WHERE id = last_insert_rowid();
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER search_docs_chat_ai AFTER INSERT ON docs
WHEN json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.type') = 'chat'
BEGIN
    INSERT INTO search_units (doc, ent, kind, session, part, title, turn)
    SELECT new.id, new.ent, 'chat', substr((SELECT e.eid FROM ents e WHERE e.id = new.ent), 6), t.key, '',
        concat_ws(char(10),
            CASE WHEN json_type(t.value, '$.user') = 'text' THEN json_extract(t.value, '$.user')
                 ELSE (SELECT group_concat(json_extract(b.value, '$.text'), char(10))
                       FROM json_each(t.value, '$.user') b WHERE json_extract(b.value, '$.type') = 'text') END,
            (SELECT group_concat(json_extract(b.value, '$.text'), char(10))
             FROM json_each(t.value, '$.assistant') b WHERE json_extract(b.value, '$.type') = 'text'))
    FROM json_each(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.turns') t
    WHERE t.key >= coalesce((SELECT json_extract(ctxs_doc(d.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = d.base)), '$.turn_count') FROM docs d
                             WHERE d.ent = new.ent AND d.id < new.id ORDER BY d.id DESC LIMIT 1), 0);
    INSERT INTO search_fts (rowid, title, body)
    SELECT id, title, turn FROM search_units WHERE doc = new.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER search_docs_bd BEFORE DELETE ON docs BEGIN
    INSERT INTO search_fts (search_fts, rowid, title, body)
    SELECT 'delete', id, title, body FROM search_src WHERE id IN (SELECT id FROM search_units WHERE doc = old.id);
    DELETE FROM search_units WHERE doc = old.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER search_docs_turn_ai AFTER INSERT ON docs
WHEN json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.type') = 'chat_turn' AND json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.converted') IS NOT 1
BEGIN
    INSERT INTO ents (eid, h) SELECT x.v, ctxs_idhash(x.v) FROM (SELECT 'chat:' || json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.session_id') AS v) x
        WHERE NOT EXISTS (SELECT 1 FROM ents e WHERE e.h = ctxs_idhash(x.v) AND e.eid = x.v);
    INSERT INTO search_units (doc, ent, kind, session, part, title, turn)
    SELECT new.id, (SELECT e.id FROM ents e WHERE e.h = ctxs_idhash('chat:' || json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.session_id')) AND e.eid = 'chat:' || json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.session_id')), 'chat', json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.session_id'),
        json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.n'), '',
        coalesce(concat_ws(char(10),
            CASE WHEN json_type(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.turn.user') = 'text' THEN json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.turn.user')
                 ELSE (SELECT group_concat(json_extract(b.value, '$.text'), char(10))
                       FROM json_each(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.turn.user') b WHERE json_extract(b.value, '$.type') = 'text') END,
            (SELECT group_concat(json_extract(b.value, '$.text'), char(10))
             FROM json_each(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.turn.assistant') b WHERE json_extract(b.value, '$.type') = 'text')), '');
    INSERT INTO search_fts (rowid, title, body)
    SELECT id, title, turn FROM search_units WHERE doc = new.id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER search_docs_ai;
DROP TRIGGER search_docs_chat_ai;
DROP TRIGGER search_docs_bd;
DROP TRIGGER search_docs_turn_ai;
DROP VIEW search_src;

CREATE TABLE points_old (
    eid     TEXT NOT NULL,
    vt      INTEGER NOT NULL,
    tx_id   INTEGER NOT NULL,
    tx_time INTEGER NOT NULL,
    doc     INTEGER, -- docs.id of the version (NULL for a tombstone)
    PRIMARY KEY (eid, vt, tx_id)
) WITHOUT ROWID;
INSERT INTO points_old (eid, vt, tx_id, tx_time, doc)
SELECT e.eid, p.vt, p.tx_id, p.tx_time, p.doc FROM points p JOIN ents e ON e.id = p.ent;
DROP TABLE points;
ALTER TABLE points_old RENAME TO points;

CREATE TABLE docs_old (
    id   INTEGER PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE,
    eid  TEXT NOT NULL,
    doc  TEXT NOT NULL
, base INTEGER);
INSERT INTO docs_old (id, hash, eid, doc, base)
SELECT d.id, d.hash, e.eid, d.doc, d.base FROM docs d JOIN ents e ON e.id = d.ent;
DROP TABLE docs;
ALTER TABLE docs_old RENAME TO docs;
CREATE INDEX docs_eid ON docs (eid);

CREATE TABLE search_units_old (
    id      INTEGER PRIMARY KEY,
    doc     INTEGER NOT NULL, -- docs.id of the version the text is from
    eid     TEXT NOT NULL,
    kind    TEXT NOT NULL,
    session TEXT,             -- the session the object belongs to, if any
    part    INTEGER NOT NULL, -- a chat's turn index; -1 for a whole document
    title   TEXT NOT NULL,    -- path, title, tool and args, nickname, tags
    turn    TEXT NOT NULL     -- content, or a turn's user and assistant text
);
INSERT INTO search_units_old (id, doc, eid, kind, session, part, title, turn)
SELECT u.id, u.doc, e.eid, u.kind, u.session, u.part, u.title, u.turn FROM search_units u JOIN ents e ON e.id = u.ent;
DROP TABLE search_units;
ALTER TABLE search_units_old RENAME TO search_units;
CREATE INDEX search_units_doc ON search_units (doc);
DROP TABLE ents;

CREATE VIEW search_src (id, title, body) AS
SELECT u.id, u.title,
       CASE WHEN u.part >= 0 THEN u.turn
            ELSE coalesce(CASE WHEN json_type(ctxs_doc(d.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = d.base)), '$.content') = 'text' THEN json_extract(ctxs_doc(d.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = d.base)), '$.content') END,
                          json_extract(ctxs_doc(d.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = d.base)), '$.summary'), '') END
FROM search_units u JOIN docs d ON d.id = u.doc;

-- +goose StatementBegin
CREATE TRIGGER search_docs_ai AFTER INSERT ON docs
WHEN json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.type') IN ('file', 'toolcall', 'note', 'user', 'system_prompt', 'session_meta')
BEGIN
    INSERT INTO search_units (doc, eid, kind, session, part, title, turn)
    VALUES (
        new.id, new.eid, json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.type'),
        CASE WHEN json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.chat_ref') LIKE 'chat:%'
             THEN substr(json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.chat_ref'), 6)
             ELSE json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.session_id') END,
        -1,
        concat_ws(' ',
            json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.source.path'), json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.title'),
            json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.name'), json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.tool'),
            CASE WHEN json_type(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.args_display') = 'text' THEN json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.args_display')
                 WHEN json_type(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.args') = 'object' THEN json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.args') END,
            json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.nickname'), json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.description'),
            (SELECT group_concat(t.value, ' ') FROM json_each(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.tags') t WHERE t.type = 'text')),
        ''
    );
    INSERT INTO search_fts (rowid, title, body)
    SELECT id, title, coalesce(CASE WHEN json_type(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.content') = 'text' THEN json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.content') END,
                               json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.summary'), '')
    FROM search_units WHERE id = last_insert_rowid();
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER search_docs_chat_ai AFTER INSERT ON docs
WHEN json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.type') = 'chat'
BEGIN
    INSERT INTO search_units (doc, eid, kind, session, part, title, turn)
    SELECT new.id, new.eid, 'chat', substr(new.eid, 6), t.key, '',
        concat_ws(char(10),
            CASE WHEN json_type(t.value, '$.user') = 'text' THEN json_extract(t.value, '$.user')
                 ELSE (SELECT group_concat(json_extract(b.value, '$.text'), char(10))
                       FROM json_each(t.value, '$.user') b WHERE json_extract(b.value, '$.type') = 'text') END,
            (SELECT group_concat(json_extract(b.value, '$.text'), char(10))
             FROM json_each(t.value, '$.assistant') b WHERE json_extract(b.value, '$.type') = 'text'))
    FROM json_each(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.turns') t
    WHERE t.key >= coalesce((SELECT json_extract(ctxs_doc(d.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = d.base)), '$.turn_count') FROM docs d
                             WHERE d.eid = new.eid AND d.id < new.id ORDER BY d.id DESC LIMIT 1), 0);
    INSERT INTO search_fts (rowid, title, body)
    SELECT id, title, turn FROM search_units WHERE doc = new.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER search_docs_bd BEFORE DELETE ON docs BEGIN
    INSERT INTO search_fts (search_fts, rowid, title, body)
    SELECT 'delete', id, title, body FROM search_src WHERE id IN (SELECT id FROM search_units WHERE doc = old.id);
    DELETE FROM search_units WHERE doc = old.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER search_docs_turn_ai AFTER INSERT ON docs
WHEN json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.type') = 'chat_turn' AND json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.converted') IS NOT 1
BEGIN
    INSERT INTO search_units (doc, eid, kind, session, part, title, turn)
    SELECT new.id, 'chat:' || json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.session_id'), 'chat', json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.session_id'),
        json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.n'), '',
        coalesce(concat_ws(char(10),
            CASE WHEN json_type(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.turn.user') = 'text' THEN json_extract(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.turn.user')
                 ELSE (SELECT group_concat(json_extract(b.value, '$.text'), char(10))
                       FROM json_each(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.turn.user') b WHERE json_extract(b.value, '$.type') = 'text') END,
            (SELECT group_concat(json_extract(b.value, '$.text'), char(10))
             FROM json_each(ctxs_doc(new.doc, (SELECT bd.doc FROM docs bd WHERE bd.id = new.base)), '$.turn.assistant') b WHERE json_extract(b.value, '$.type') = 'text')), '');
    INSERT INTO search_fts (rowid, title, body)
    SELECT id, title, turn FROM search_units WHERE doc = new.id;
END;
-- +goose StatementEnd
