-- The tx log compressed against an earlier row (docs/architecture.md
-- "The SQLite backend"): a txs row's ops may now be a BLOB of one byte 0x02 and
-- a DEFLATE stream whose dictionary is the ops text of the row txs.base
-- names (a row stored 0x01, compressed alone; bitemporal/packlog.go).
-- Rows written before stay as they are. Down stores every delta compressed
-- alone again, as migration 00010 reads them.

-- +goose Up
ALTER TABLE txs ADD COLUMN base INTEGER;

-- +goose Down
UPDATE txs SET ops = ctxs_pack_log(ctxs_log_base(ops, (SELECT b.ops FROM txs b WHERE b.tx_id = txs.base))), base = NULL
    WHERE base IS NOT NULL;
ALTER TABLE txs DROP COLUMN base;
