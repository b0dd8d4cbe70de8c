-- Full-text search without a second copy of document bodies (docs/recall.md,
-- docs/benchmarks.md "Search"): 00002 stored every indexed body in
-- search_units as FTS5's external content; here the content becomes the view
-- search_src, which reads a whole document's body from its docs row, and
-- search_units keeps only titles and chat turns' text (column turn). Every
-- unit is kept; the FTS5 index is rebuilt from the view.

-- +goose Up
DROP TRIGGER search_docs_ad;
DROP TRIGGER search_docs_chat_ai;
DROP TRIGGER search_docs_ai;
DROP TRIGGER search_units_ad;
DROP TRIGGER search_units_ai;
DROP TABLE search_fts;
ALTER TABLE search_units RENAME COLUMN body TO turn;
UPDATE search_units SET turn = '' WHERE part < 0;

-- The indexed text, without a second copy of document bodies: a whole
-- document's body is read from its docs row (content, or a summary).
CREATE VIEW search_src (id, title, body) AS
SELECT u.id, u.title,
       CASE WHEN u.part >= 0 THEN u.turn
            ELSE coalesce(CASE WHEN json_type(d.doc, '$.content') = 'text' THEN json_extract(d.doc, '$.content') END,
                          json_extract(d.doc, '$.summary'), '') END
FROM search_units u JOIN docs d ON d.id = u.doc;

CREATE VIRTUAL TABLE search_fts USING fts5(
    title, body,
    content = 'search_src', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
-- Rank by BM25 with a match in the title worth twice one in the body.
INSERT INTO search_fts (search_fts, rank) VALUES ('rank', 'bm25(2.0, 1.0)');
-- A delete (only an evict deletes docs rows) removes the entries from the
-- index b-tree at once instead of leaving delete markers until a merge, so
-- an evicted object's words leave the file (with the store's secure_delete).
INSERT INTO search_fts (search_fts, rank) VALUES ('secure-delete', 1);

-- Every kind but chats: one unit per document version.
-- +goose StatementBegin
CREATE TRIGGER search_docs_ai AFTER INSERT ON docs
WHEN json_extract(new.doc, '$.type') IN ('file', 'toolcall', 'note', 'user', 'system_prompt', 'session_meta')
BEGIN
    INSERT INTO search_units (doc, eid, kind, session, part, title, turn)
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
        ''
    );
    INSERT INTO search_fts (rowid, title, body)
    SELECT id, title, coalesce(CASE WHEN json_type(new.doc, '$.content') = 'text' THEN json_extract(new.doc, '$.content') END,
                               json_extract(new.doc, '$.summary'), '')
    FROM search_units WHERE id = last_insert_rowid();
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
    INSERT INTO search_units (doc, eid, kind, session, part, title, turn)
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
    INSERT INTO search_fts (rowid, title, body)
    SELECT id, title, turn FROM search_units WHERE doc = new.id;
END;
-- +goose StatementEnd

-- An evict deletes the entity's docs rows: their index entries go first
-- (while the row still gives a whole document's body), then the units.
-- +goose StatementBegin
CREATE TRIGGER search_docs_bd BEFORE DELETE ON docs BEGIN
    INSERT INTO search_fts (search_fts, rowid, title, body)
    SELECT 'delete', id, title, body FROM search_src WHERE id IN (SELECT id FROM search_units WHERE doc = old.id);
    DELETE FROM search_units WHERE doc = old.id;
END;
-- +goose StatementEnd

INSERT INTO search_fts (search_fts) VALUES ('rebuild');

-- +goose Down
DROP TRIGGER search_docs_bd;
DROP TRIGGER search_docs_chat_ai;
DROP TRIGGER search_docs_ai;
DROP TABLE search_fts;
UPDATE search_units SET turn = (SELECT body FROM search_src s WHERE s.id = search_units.id) WHERE part < 0;
DROP VIEW search_src;
ALTER TABLE search_units RENAME COLUMN turn TO body;
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

INSERT INTO search_fts (search_fts) VALUES ('rebuild');
