-- The tx log's ops stored compressed (docs/architecture.md
-- "The SQLite backend"): a txs row's ops are the JSON text of its logged ops or,
-- when smaller, a BLOB of one byte 0x01 and a DEFLATE stream of that text
-- (bitemporal/packlog.go). A row holding a match's document inline (older stores
-- logged them so; an evict scrubs them from text rows) stays
-- text. ctxs_pack_log and ctxs_log are Go functions the bitemporal package
-- registers on every connection. Down stores every row as text again.

-- +goose Up
UPDATE txs SET ops = ctxs_pack_log(ops) WHERE typeof(ops) = 'text';

-- +goose Down
UPDATE txs SET ops = ctxs_log(ops) WHERE typeof(ops) = 'blob';
