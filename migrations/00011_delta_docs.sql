-- Documents compressed against an earlier version of the same entity
-- (docs/architecture.md "The SQLite backend"): a new docs row may be a
-- DEFLATE stream whose dictionary is the JSONB of the row docs.base names,
-- an earlier version of the same entity that is not such a row itself
-- (bitemporal/pack.go, packDelta). Successive versions of a session head or
-- a session chunk share most of their text. Reads pass the base row's
-- stored form to ctxs_doc; the search view and triggers do so here. Rows
-- written before stay as they are (base NULL). Down packs every such row
-- on its own again and drops the column.

-- +goose Up
ALTER TABLE docs ADD COLUMN base INTEGER; -- docs.id of the row a packDelta row is against
DROP TRIGGER search_docs_ai;
DROP TRIGGER search_docs_chat_ai;
DROP TRIGGER search_docs_bd;
DROP TRIGGER search_docs_turn_ai;
DROP VIEW search_src;

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


-- +goose Down
UPDATE docs SET doc = ctxs_pack(ctxs_doc(doc, (SELECT bd.doc FROM docs bd WHERE bd.id = docs.base))), base = NULL
WHERE base IS NOT NULL;
DROP TRIGGER search_docs_ai;
DROP TRIGGER search_docs_chat_ai;
DROP TRIGGER search_docs_bd;
DROP TRIGGER search_docs_turn_ai;
DROP VIEW search_src;

CREATE VIEW search_src (id, title, body) AS
SELECT u.id, u.title,
       CASE WHEN u.part >= 0 THEN u.turn
            ELSE coalesce(CASE WHEN json_type(ctxs_doc(d.doc), '$.content') = 'text' THEN json_extract(ctxs_doc(d.doc), '$.content') END,
                          json_extract(ctxs_doc(d.doc), '$.summary'), '') END
FROM search_units u JOIN docs d ON d.id = u.doc;

-- +goose StatementBegin
CREATE TRIGGER search_docs_ai AFTER INSERT ON docs
WHEN json_extract(ctxs_doc(new.doc), '$.type') IN ('file', 'toolcall', 'note', 'user', 'system_prompt', 'session_meta')
BEGIN
    INSERT INTO search_units (doc, eid, kind, session, part, title, turn)
    VALUES (
        new.id, new.eid, json_extract(ctxs_doc(new.doc), '$.type'),
        CASE WHEN json_extract(ctxs_doc(new.doc), '$.chat_ref') LIKE 'chat:%'
             THEN substr(json_extract(ctxs_doc(new.doc), '$.chat_ref'), 6)
             ELSE json_extract(ctxs_doc(new.doc), '$.session_id') END,
        -1,
        concat_ws(' ',
            json_extract(ctxs_doc(new.doc), '$.source.path'), json_extract(ctxs_doc(new.doc), '$.title'),
            json_extract(ctxs_doc(new.doc), '$.name'), json_extract(ctxs_doc(new.doc), '$.tool'),
            CASE WHEN json_type(ctxs_doc(new.doc), '$.args_display') = 'text' THEN json_extract(ctxs_doc(new.doc), '$.args_display')
                 WHEN json_type(ctxs_doc(new.doc), '$.args') = 'object' THEN json_extract(ctxs_doc(new.doc), '$.args') END,
            json_extract(ctxs_doc(new.doc), '$.nickname'), json_extract(ctxs_doc(new.doc), '$.description'),
            (SELECT group_concat(t.value, ' ') FROM json_each(ctxs_doc(new.doc), '$.tags') t WHERE t.type = 'text')),
        ''
    );
    INSERT INTO search_fts (rowid, title, body)
    SELECT id, title, coalesce(CASE WHEN json_type(ctxs_doc(new.doc), '$.content') = 'text' THEN json_extract(ctxs_doc(new.doc), '$.content') END,
                               json_extract(ctxs_doc(new.doc), '$.summary'), '')
    FROM search_units WHERE id = last_insert_rowid();
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER search_docs_chat_ai AFTER INSERT ON docs
WHEN json_extract(ctxs_doc(new.doc), '$.type') = 'chat'
BEGIN
    INSERT INTO search_units (doc, eid, kind, session, part, title, turn)
    SELECT new.id, new.eid, 'chat', substr(new.eid, 6), t.key, '',
        concat_ws(char(10),
            CASE WHEN json_type(t.value, '$.user') = 'text' THEN json_extract(t.value, '$.user')
                 ELSE (SELECT group_concat(json_extract(b.value, '$.text'), char(10))
                       FROM json_each(t.value, '$.user') b WHERE json_extract(b.value, '$.type') = 'text') END,
            (SELECT group_concat(json_extract(b.value, '$.text'), char(10))
             FROM json_each(t.value, '$.assistant') b WHERE json_extract(b.value, '$.type') = 'text'))
    FROM json_each(ctxs_doc(new.doc), '$.turns') t
    WHERE t.key >= coalesce((SELECT json_extract(ctxs_doc(d.doc), '$.turn_count') FROM docs d
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
WHEN json_extract(ctxs_doc(new.doc), '$.type') = 'chat_turn' AND json_extract(ctxs_doc(new.doc), '$.converted') IS NOT 1
BEGIN
    INSERT INTO search_units (doc, eid, kind, session, part, title, turn)
    SELECT new.id, 'chat:' || json_extract(ctxs_doc(new.doc), '$.session_id'), 'chat', json_extract(ctxs_doc(new.doc), '$.session_id'),
        json_extract(ctxs_doc(new.doc), '$.n'), '',
        coalesce(concat_ws(char(10),
            CASE WHEN json_type(ctxs_doc(new.doc), '$.turn.user') = 'text' THEN json_extract(ctxs_doc(new.doc), '$.turn.user')
                 ELSE (SELECT group_concat(json_extract(b.value, '$.text'), char(10))
                       FROM json_each(ctxs_doc(new.doc), '$.turn.user') b WHERE json_extract(b.value, '$.type') = 'text') END,
            (SELECT group_concat(json_extract(b.value, '$.text'), char(10))
             FROM json_each(ctxs_doc(new.doc), '$.turn.assistant') b WHERE json_extract(b.value, '$.type') = 'text')), '');
    INSERT INTO search_fts (rowid, title, body)
    SELECT id, title, turn FROM search_units WHERE doc = new.id;
END;
-- +goose StatementEnd

ALTER TABLE docs DROP COLUMN base;
