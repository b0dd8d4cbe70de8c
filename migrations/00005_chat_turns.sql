-- Full-text search over chats stored one document per turn
-- (docs/context-manager.md "The chat: a head and one document per turn"):
-- a "chat_turn" document becomes the search unit of its turn, under the
-- chat's id ("chat:{session}") and part n, so search answers as it did for
-- chats written whole. The unit is visible once the chat head's visible
-- version is at least as new as the turn's document (the head is written
-- after its turns, in the same transaction). Turn documents written when
-- an earlier chat is converted ("converted": true) are not indexed again:
-- the chat versions that held those turns indexed them.

-- +goose Up
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

-- +goose Down
DROP TRIGGER search_docs_turn_ai;
