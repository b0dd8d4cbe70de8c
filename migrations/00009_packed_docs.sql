-- Documents stored compressed (docs/architecture.md "The
-- SQLite backend"): a docs row holds a document's JSONB (00006) or, when that is
-- smaller, the JSONB compressed with DEFLATE behind a two-byte header whose
-- first byte, 0x0d, is a type JSONB reserves (bitemporal/pack.go). SQL reads
-- a document through ctxs_doc(doc), which gives the JSONB of either form;
-- writes store ctxs_pack(jsonb(?)). Both are Go functions the bitemporal
-- package registers on every connection. The search view and triggers read
-- documents through ctxs_doc; their text is unchanged, so the FTS5 index
-- (whose content is the view) stays as it is. Down stores every document
-- as JSONB again and puts back the triggers and view of 00003 and 00005.

-- +goose Up
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

UPDATE docs SET doc = ctxs_pack(doc) WHERE typeof(doc) = 'blob';

-- +goose Down
UPDATE docs SET doc = ctxs_doc(doc) WHERE typeof(doc) = 'blob';
DROP TRIGGER search_docs_ai;
DROP TRIGGER search_docs_chat_ai;
DROP TRIGGER search_docs_bd;
DROP TRIGGER search_docs_turn_ai;
DROP VIEW search_src;

CREATE VIEW search_src (id, title, body) AS
SELECT u.id, u.title,
       CASE WHEN u.part >= 0 THEN u.turn
            ELSE coalesce(CASE WHEN json_type(d.doc, '$.content') = 'text' THEN json_extract(d.doc, '$.content') END,
                          json_extract(d.doc, '$.summary'), '') END
FROM search_units u JOIN docs d ON d.id = u.doc;

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

-- +goose StatementBegin
CREATE TRIGGER search_docs_bd BEFORE DELETE ON docs BEGIN
    INSERT INTO search_fts (search_fts, rowid, title, body)
    SELECT 'delete', id, title, body FROM search_src WHERE id IN (SELECT id FROM search_units WHERE doc = old.id);
    DELETE FROM search_units WHERE doc = old.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER search_docs_turn_ai AFTER INSERT ON docs
WHEN json_extract(new.doc, '$.type') = 'chat_turn' AND json_extract(new.doc, '$.converted') IS NOT 1
BEGIN
    INSERT INTO search_units (doc, eid, kind, session, part, title, turn)
    SELECT new.id, 'chat:' || json_extract(new.doc, '$.session_id'), 'chat', json_extract(new.doc, '$.session_id'),
        json_extract(new.doc, '$.n'), '',
        coalesce(concat_ws(char(10),
            CASE WHEN json_type(new.doc, '$.turn.user') = 'text' THEN json_extract(new.doc, '$.turn.user')
                 ELSE (SELECT group_concat(json_extract(b.value, '$.text'), char(10))
                       FROM json_each(new.doc, '$.turn.user') b WHERE json_extract(b.value, '$.type') = 'text') END,
            (SELECT group_concat(json_extract(b.value, '$.text'), char(10))
             FROM json_each(new.doc, '$.turn.assistant') b WHERE json_extract(b.value, '$.type') = 'text')), '');
    INSERT INTO search_fts (rowid, title, body)
    SELECT id, title, turn FROM search_units WHERE doc = new.id;
END;
-- +goose StatementEnd
