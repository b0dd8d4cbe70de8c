-- Full-text search, a derived layer (docs/recall.md): search units
-- (the searchable text of each stored document version, one unit per chat
-- turn) and an FTS5 index over them. Triggers on docs keep both in the same
-- SQLite transaction as the write: no lag, and an evict (which deletes the
-- entity's docs rows) removes its units and index entries. Dropping these
-- tables loses nothing: the migration rebuilds them from docs.

-- +goose Up
CREATE TABLE search_units (
    id      INTEGER PRIMARY KEY,
    doc     INTEGER NOT NULL, -- docs.id of the version the text is from
    eid     TEXT NOT NULL,
    kind    TEXT NOT NULL,
    session TEXT,             -- the session the object belongs to, if any
    part    INTEGER NOT NULL, -- a chat's turn index; -1 for a whole document
    title   TEXT NOT NULL,    -- path, title, tool and args, nickname, tags
    body    TEXT NOT NULL     -- content, or a turn's user and assistant text
);
CREATE INDEX search_units_doc ON search_units (doc);

CREATE VIRTUAL TABLE search_fts USING fts5(
    title, body,
    content = 'search_units', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
-- Rank by BM25 with a match in the title worth twice one in the body.
INSERT INTO search_fts (search_fts, rank) VALUES ('rank', 'bm25(2.0, 1.0)');
-- A delete (only an evict deletes docs rows) removes the entries from the
-- index b-tree at once instead of leaving delete markers until a merge, so
-- an evicted object's words leave the file (with the store's secure_delete).
INSERT INTO search_fts (search_fts, rank) VALUES ('secure-delete', 1);

-- +goose StatementBegin
CREATE TRIGGER search_units_ai AFTER INSERT ON search_units BEGIN
    INSERT INTO search_fts (rowid, title, body) VALUES (new.id, new.title, new.body);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER search_units_ad AFTER DELETE ON search_units BEGIN
    INSERT INTO search_fts (search_fts, rowid, title, body) VALUES ('delete', old.id, old.title, old.body);
END;
-- +goose StatementEnd

-- Every kind but chats: one unit per document version.
-- +goose StatementBegin
CREATE TRIGGER search_docs_ai AFTER INSERT ON docs
WHEN json_extract(new.doc, '$.type') IN ('file', 'toolcall', 'note', 'user', 'system_prompt', 'session_meta')
BEGIN
    INSERT INTO search_units (doc, eid, kind, session, part, title, body)
    VALUES (
        new.id, new.eid, json_extract(new.doc, '$.type'),
        CASE WHEN json_extract(new.doc, '$.chat_ref') LIKE 'chat:%'
             THEN substr(json_extract(new.doc, '$.chat_ref'), 6)
             ELSE json_extract(new.doc, '$.session_id') END,
        -1,
        concat_ws(' ',
            json_extract(new.doc, '$.source.path'), json_extract(new.doc, '$.title'),
            json_extract(new.doc, '$.name'), json_extract(new.doc, '$.tool'),
            CASE WHEN json_type(new.doc, '$.args_display') = 'text' THEN json_extract(new.doc, '$.args_display')
                 WHEN json_type(new.doc, '$.args') = 'object' THEN json_extract(new.doc, '$.args') END,
            json_extract(new.doc, '$.nickname'), json_extract(new.doc, '$.description'),
            (SELECT group_concat(t.value, ' ') FROM json_each(new.doc, '$.tags') t WHERE t.type = 'text')),
        coalesce(CASE WHEN json_type(new.doc, '$.content') = 'text' THEN json_extract(new.doc, '$.content') END,
                 json_extract(new.doc, '$.summary'), '')
    );
END;
-- +goose StatementEnd

-- A chat: one unit per turn that its previous stored version did not have
-- (chats grow by appending turns, so the index grows with the turns, not
-- with turns times versions). Text is the user's text and the assistant's
-- text blocks (no thinking, no tool calls).
-- +goose StatementBegin
CREATE TRIGGER search_docs_chat_ai AFTER INSERT ON docs
WHEN json_extract(new.doc, '$.type') = 'chat'
BEGIN
    INSERT INTO search_units (doc, eid, kind, session, part, title, body)
    SELECT new.id, new.eid, 'chat', substr(new.eid, 6), t.key, '',
        concat_ws(char(10),
            CASE WHEN json_type(t.value, '$.user') = 'text' THEN json_extract(t.value, '$.user')
                 ELSE (SELECT group_concat(json_extract(b.value, '$.text'), char(10))
                       FROM json_each(t.value, '$.user') b WHERE json_extract(b.value, '$.type') = 'text') END,
            (SELECT group_concat(json_extract(b.value, '$.text'), char(10))
             FROM json_each(t.value, '$.assistant') b WHERE json_extract(b.value, '$.type') = 'text'))
    FROM json_each(new.doc, '$.turns') t
    WHERE t.key >= coalesce((SELECT json_extract(d.doc, '$.turn_count') FROM docs d
                             WHERE d.eid = new.eid AND d.id < new.id ORDER BY d.id DESC LIMIT 1), 0);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER search_docs_ad AFTER DELETE ON docs BEGIN
    DELETE FROM search_units WHERE doc = old.id;
END;
-- +goose StatementEnd

-- Index what the store already holds, in docs order (so each chat version
-- finds its predecessor): re-inserting every row through the triggers is
-- not possible, so the same expressions run over the table.
INSERT INTO search_units (doc, eid, kind, session, part, title, body)
SELECT d.id, d.eid, json_extract(d.doc, '$.type'),
    CASE WHEN json_extract(d.doc, '$.chat_ref') LIKE 'chat:%'
         THEN substr(json_extract(d.doc, '$.chat_ref'), 6)
         ELSE json_extract(d.doc, '$.session_id') END,
    -1,
    concat_ws(' ',
        json_extract(d.doc, '$.source.path'), json_extract(d.doc, '$.title'),
        json_extract(d.doc, '$.name'), json_extract(d.doc, '$.tool'),
        CASE WHEN json_type(d.doc, '$.args_display') = 'text' THEN json_extract(d.doc, '$.args_display')
             WHEN json_type(d.doc, '$.args') = 'object' THEN json_extract(d.doc, '$.args') END,
        json_extract(d.doc, '$.nickname'), json_extract(d.doc, '$.description'),
        (SELECT group_concat(t.value, ' ') FROM json_each(d.doc, '$.tags') t WHERE t.type = 'text')),
    coalesce(CASE WHEN json_type(d.doc, '$.content') = 'text' THEN json_extract(d.doc, '$.content') END,
             json_extract(d.doc, '$.summary'), '')
FROM docs d
WHERE json_extract(d.doc, '$.type') IN ('file', 'toolcall', 'note', 'user', 'system_prompt', 'session_meta')
ORDER BY d.id;

INSERT INTO search_units (doc, eid, kind, session, part, title, body)
SELECT d.id, d.eid, 'chat', substr(d.eid, 6), t.key, '',
    concat_ws(char(10),
        CASE WHEN json_type(t.value, '$.user') = 'text' THEN json_extract(t.value, '$.user')
             ELSE (SELECT group_concat(json_extract(b.value, '$.text'), char(10))
                   FROM json_each(t.value, '$.user') b WHERE json_extract(b.value, '$.type') = 'text') END,
        (SELECT group_concat(json_extract(b.value, '$.text'), char(10))
         FROM json_each(t.value, '$.assistant') b WHERE json_extract(b.value, '$.type') = 'text'))
FROM docs d, json_each(d.doc, '$.turns') t
WHERE json_extract(d.doc, '$.type') = 'chat'
  AND t.key >= coalesce((SELECT json_extract(p.doc, '$.turn_count') FROM docs p
                         WHERE p.eid = d.eid AND p.id < d.id ORDER BY p.id DESC LIMIT 1), 0)
ORDER BY d.id, t.key;

-- +goose Down
DROP TRIGGER search_docs_ad;
DROP TRIGGER search_docs_chat_ai;
DROP TRIGGER search_docs_ai;
DROP TRIGGER search_units_ad;
DROP TRIGGER search_units_ai;
DROP TABLE search_fts;
DROP TABLE search_units;
